"""Kueue v0.19 rules that its CRDs state in CEL (x-kubernetes-validations) or its webhook
enforces, which JSON schemas (hence kubeconform) cannot check. The apiserver would reject
such an object at sync time, after the pull request merged.

ClusterQueue: borrowing and lending limits need a cohort; lendingLimit <= nominalQuota;
a flavor and a resource belong to one resource group only; reclaimWithinCohort Never forbids
borrowWithinCohort; flavorFungibility.preference needs both TryNextFlavor. Topology: levels
unique, kubernetes.io/hostname only as the last. ResourceFlavor: topologyName needs a
nodeLabel; taint effects and toleration shapes as the CRD's CEL states them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from generators.model.quantity import QuantityError, parse
from policies.context import Context, Finding, RenderedObject

ID = "kueue-rules"
RATIONALE = (
    "Kueue's CEL and webhook rules are invisible to JSON-schema validation, and an object "
    "breaking one is rejected by the apiserver only when Argo CD syncs it"
)
SEVERITY = "error"
HOSTNAME = "kubernetes.io/hostname"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def check(ctx: Context) -> Iterable[Finding]:
    for item in ctx.of_kind("ClusterQueue"):
        yield from (item.finding(m) for m in _cluster_queue(item.spec))
    for item in ctx.of_kind("Topology"):
        yield from (item.finding(m) for m in _topology(item))
    for item in ctx.of_kind("ResourceFlavor"):
        yield from (item.finding(m) for m in _resource_flavor(item.spec))


def _cells(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for g, group in enumerate(spec.get("resourceGroups") or []):
        for f, flavor in enumerate(group.get("flavors") or []):
            for r, cell in enumerate(flavor.get("resources") or []):
                yield f"spec.resourceGroups[{g}].flavors[{f}].resources[{r}]", cell


def _amount(value: Any) -> Any:
    try:
        return parse(value).value
    except QuantityError:
        return None  # kubeconform reports a malformed quantity


def _cluster_queue(spec: Mapping[str, Any]) -> Iterator[str]:
    for where, cell in _cells(spec):
        for limit in ("borrowingLimit", "lendingLimit"):
            if limit in cell and not spec.get("cohortName"):
                yield f"{where}.{limit} needs spec.cohortName: limits only apply within a cohort"
        nominal, lending = _amount(cell.get("nominalQuota", 0)), _amount(cell.get("lendingLimit"))
        if "lendingLimit" in cell and None not in (nominal, lending) and lending > nominal:
            yield (
                f"{where}.lendingLimit {cell['lendingLimit']} is above nominalQuota "
                f"{cell.get('nominalQuota')}"
            )
    yield from _groups(spec)
    preemption: Mapping[str, Any] = spec.get("preemption") or {}
    borrow = (preemption.get("borrowWithinCohort") or {}).get("policy", "Never")
    if preemption.get("reclaimWithinCohort") == "Never" and borrow != "Never":
        yield f"preemption.reclaimWithinCohort Never forbids borrowWithinCohort.policy {borrow}"
    fungibility: Mapping[str, Any] = spec.get("flavorFungibility") or {}
    if "preference" in fungibility and not all(
        fungibility.get(k) == "TryNextFlavor" for k in ("whenCanBorrow", "whenCanPreempt")
    ):
        yield ("flavorFungibility.preference needs whenCanBorrow and whenCanPreempt both TryNextFlavor")


def _groups(spec: Mapping[str, Any]) -> Iterator[str]:
    """A flavor, and a resource, may appear in one resource group only."""
    flavor_group: dict[str, int] = {}
    resource_group: dict[str, int] = {}
    for g, group in enumerate(spec.get("resourceGroups") or []):
        for kind, seen, names in (
            ("flavor", flavor_group, [f.get("name") for f in group.get("flavors") or []]),
            ("resource", resource_group, list(group.get("coveredResources") or [])),
        ):
            for name in names:
                if seen.setdefault(str(name), g) != g:
                    yield (
                        f"{kind} {name!r} is in resourceGroups[{seen[str(name)]}] and "
                        f"resourceGroups[{g}]; it may be in one group only"
                    )


def _topology(item: RenderedObject) -> Iterator[str]:
    labels = [str(level.get("nodeLabel")) for level in item.spec.get("levels") or []]
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if duplicates:
        yield f"spec.levels repeats {', '.join(duplicates)}; levels must be unique"
    if HOSTNAME in labels and labels[-1] != HOSTNAME:
        yield f"spec.levels: {HOSTNAME} can only be the last (lowest) level"


def _resource_flavor(spec: Mapping[str, Any]) -> Iterator[str]:
    if spec.get("topologyName") and not spec.get("nodeLabels"):
        yield "spec.topologyName needs at least one spec.nodeLabels entry"
    for index, taint in enumerate(spec.get("nodeTaints") or []):
        if taint.get("effect") not in TAINT_EFFECTS:
            yield f"spec.nodeTaints[{index}].effect {taint.get('effect')!r} is not one of {TAINT_EFFECTS}"
    for index, toleration in enumerate(spec.get("tolerations") or []):
        where = f"spec.tolerations[{index}]"
        operator = toleration.get("operator", "Equal")
        if not toleration.get("key") and operator != "Exists":
            yield f"{where}: an empty key needs operator Exists"
        if operator == "Exists" and toleration.get("value"):
            yield f"{where}: operator Exists takes no value"
        if "tolerationSeconds" in toleration and toleration.get("effect") != "NoExecute":
            yield f"{where}: tolerationSeconds needs effect NoExecute"
        if toleration.get("effect") not in (None, "", *TAINT_EFFECTS):
            yield f"{where}.effect {toleration.get('effect')!r} is not one of {TAINT_EFFECTS}"
