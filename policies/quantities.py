"""Every rendered resource quantity fits what Kubernetes and Kueue can hold.

resource.Quantity serialises any size, but Value() and MilliValue() are int64: the apiserver
caps a larger quota (`201600Pi` became 8Ei), so the stored object never equals the rendered
one and Argo CD shows it OutOfSync forever, while Kueue (which compares CPU in millicores and
everything else in whole units, rounding fractions up) admits against a different number.
Where quantities sit: Kueue quotas (nominalQuota, borrowingLimit, lendingLimit) and container
requests and limits.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Any

from generators.model import quantity
from generators.model.checks.quantities import INT64_MAX
from policies import walk
from policies.context import Context, Finding, RenderedObject

ID = "quantities"
RATIONALE = (
    "a quantity past int64 is capped by the apiserver (Argo CD OutOfSync forever) and a "
    "fraction of a byte or device is rounded by Kueue, so quotas would not be what is rendered"
)
SEVERITY = "error"
QUOTA_KEYS = ("nominalQuota", "borrowingLimit", "lendingLimit")


def _quantities(item: RenderedObject) -> Iterator[tuple[str, str, Any]]:
    """(field path, resource name, value) of every quantity in the object."""
    for path, node in item.tree:
        if isinstance(node.get("name"), str) and any(k in node for k in QUOTA_KEYS):
            for key in QUOTA_KEYS:
                if key in node:
                    yield walk.show((*path, key)), node["name"], node[key]
    for path, pod in walk.pod_specs(item.tree):
        for where, container in walk.containers(pod):
            resources = container.get("resources")
            for kind in ("requests", "limits"):
                amounts = resources.get(kind) if isinstance(resources, Mapping) else None
                for name, value in (amounts or {}).items():
                    yield walk.show((*path, where, "resources", kind, str(name))), str(name), value


def problem(resource: str, raw: Any) -> str | None:
    """Why `raw` is not a quantity Kubernetes keeps as written, or None."""
    try:
        value = quantity.parse(raw).value
    except quantity.QuantityError:
        return f"{raw!r} is not a Kubernetes quantity"
    milli = resource == "cpu"
    scaled = value * 1000 if milli else value
    if scaled > INT64_MAX:
        unit = "millicores" if milli else "units"
        return (
            f"{raw} is {float(scaled):.3e} {unit}, past Kubernetes' int64 limit "
            f"(2^63-1 {unit}); the apiserver would cap it"
        )
    if Fraction(scaled).denominator != 1:
        unit = "millicore" if milli else ("byte" if resource == "memory" else "unit")
        return f"{raw} is not a whole {unit}; Kueue and the scheduler round it up"
    return None


def check(ctx: Context) -> Iterable[Finding]:
    for item in ctx.objects:
        for path, resource, raw in _quantities(item):
            if (why := problem(resource, raw)) is not None:
                yield item.finding(f"{path}: {why}")
