"""Per flavor and resource, nominal quotas add up to at most what the pool can back.

Kueue's waitForPodsReady does not look at node capacity: a quota larger than the pool
admits gangs that never become Ready. Cohort quotas are added to their queues' by Kueue,
so they count too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Any

from generators.model.quantity import QuantityError, canonical, parse
from policies.context import Context, Finding, RenderedObject

ID = "quota-conservation"
RATIONALE = (
    "nominal quotas above real capacity admit gangs that can never be placed, "
    "so per flavor and resource they must sum to at most the pool's schedulable capacity"
)
SEVERITY = "error"
_SHOWN_CONTRIBUTORS = 6


def _cells(item: RenderedObject) -> Iterator[tuple[str, str, Any]]:
    """(flavor, resource, nominalQuota) of a ClusterQueue or Cohort."""
    for group in item.spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for resource in flavor.get("resources") or []:
                yield str(flavor.get("name")), str(resource.get("name")), resource.get("nominalQuota")


def _show(amount: Fraction, resource: str) -> str:
    return canonical(amount, "binary" if resource == "memory" else "decimal")


def check(ctx: Context) -> Iterable[Finding]:
    sums: dict[tuple[str, str], dict[RenderedObject, Fraction]] = {}
    for item in ctx.of_kind("ClusterQueue", "Cohort"):
        for flavor, resource, raw in _cells(item):
            try:
                amount = parse(raw).value if raw is not None else Fraction(0)
            except QuantityError as error:
                yield item.finding(f"{flavor}/{resource}: nominalQuota {error}")
                continue
            cell = sums.setdefault((flavor, resource), {})
            cell[item] = cell.get(item, Fraction(0)) + amount
    flavors = ctx.names("ResourceFlavor")
    pools = {pool.name: pool for pool in ctx.env.pools}
    for (flavor, resource), parts in sorted(sums.items()):
        total = sum(parts.values(), Fraction(0))
        contributors = sorted(parts, key=lambda i: (i.kind, i.name))
        where = flavors.get(flavor, contributors[0])
        pool = pools.get(flavor)
        if pool is None:
            if total > 0:
                yield where.finding(
                    f"flavor {flavor!r} holds {resource} quota but is not a pool of "
                    f"{ctx.env.source_file}: no capacity backs it"
                )
            continue
        capacity = pool.capacity(resource)
        if total > capacity:
            yield where.finding(
                f"{resource}: nominal quotas sum to {_show(total, resource)}, above the "
                f"{_show(capacity, resource)} that {pool.schedulable_nodes} schedulable nodes "
                f"of pool {flavor} back ({_parts(parts, contributors, resource)})"
            )


def _parts(parts: Mapping[RenderedObject, Fraction], ordered: list[RenderedObject], resource: str) -> str:
    shown = [f"{i.kind} {i.name} {_show(parts[i], resource)}" for i in ordered if parts[i]]
    more = len(shown) - _SHOWN_CONTRIBUTORS
    return ", ".join(shown[:_SHOWN_CONTRIBUTORS]) + (f", +{more} more" if more > 0 else "")
