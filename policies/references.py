"""Every name one object uses to point at another resolves within the environment.

LocalQueue -> ClusterQueue -> ResourceFlavor / Cohort; ResourceFlavor -> Topology;
Cohort -> parent Cohort; priorityClassName (any pod spec) -> PriorityClass;
label kueue.x-k8s.io/priority-class (any object or template) -> WorkloadPriorityClass.
Also Kueue's rule that every flavor lists its resources in coveredResources order
(the webhook misses some cases: kubernetes-sigs/kueue#12570, #14926).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from policies.context import Context, Finding, RenderedObject
from policies.walk import label_maps, show

ID = "references"
RATIONALE = (
    "a queue, flavor, cohort or priority class that names a missing object goes "
    "inactive or is rejected at admission, so every reference must resolve"
)
SEVERITY = "error"
# PriorityClasses every cluster has (kube-apiserver creates them).
BUILTIN_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"


def check(ctx: Context) -> Iterable[Finding]:
    yield from _queues(ctx)
    yield from _priority_classes(ctx)
    yield from _workload_priority_classes(ctx)


def _missing(
    item: RenderedObject, field: str, kind: str, name: Any, known: Mapping[str, RenderedObject]
) -> Iterator[Finding]:
    if name is not None and str(name) not in known:
        yield item.finding(
            f"{field} names {kind} {name!r}, which this environment does not render" + _known(known)
        )


def _known(known: Mapping[str, Any]) -> str:
    names = sorted(known)
    return f" (known: {', '.join(names[:8])}{', ...' if len(names) > 8 else ''})" if names else ""


def _queues(ctx: Context) -> Iterator[Finding]:
    flavors, cohorts = ctx.names("ResourceFlavor"), ctx.names("Cohort")
    cluster_queues, topologies = ctx.names("ClusterQueue"), ctx.names("Topology")
    for item in ctx.of_kind("LocalQueue"):
        yield from _missing(
            item, "spec.clusterQueue", "ClusterQueue", item.spec.get("clusterQueue"), cluster_queues
        )
    for item in ctx.of_kind("ResourceFlavor"):
        yield from _missing(item, "spec.topologyName", "Topology", item.spec.get("topologyName"), topologies)
    for item in ctx.of_kind("Cohort"):
        yield from _missing(item, "spec.parentName", "Cohort", item.spec.get("parentName"), cohorts)
    for item in ctx.of_kind("ClusterQueue", "Cohort"):
        if item.kind == "ClusterQueue":
            yield from _missing(item, "spec.cohortName", "Cohort", item.spec.get("cohortName"), cohorts)
        for g, group in enumerate(item.spec.get("resourceGroups") or []):
            covered = [str(r) for r in group.get("coveredResources") or []]
            for f, flavor in enumerate(group.get("flavors") or []):
                where = f"spec.resourceGroups[{g}].flavors[{f}]"
                yield from _missing(item, f"{where}.name", "ResourceFlavor", flavor.get("name"), flavors)
                listed = [str(r.get("name")) for r in flavor.get("resources") or []]
                if listed != covered:
                    yield item.finding(
                        f"{where}.resources lists {listed} but coveredResources is {covered}: "
                        "Kueue requires the same resources in the same order"
                    )


def _priority_classes(ctx: Context) -> Iterator[Finding]:
    known = {**ctx.names("PriorityClass"), **{n: None for n in BUILTIN_PRIORITY_CLASSES}}
    for item in ctx.objects:
        if item.kind == "PriorityClass":
            continue
        for path, node in item.tree:
            name = node.get("priorityClassName")
            if isinstance(name, str) and name not in known:
                yield item.finding(
                    f"{show((*path, 'priorityClassName'))} names PriorityClass {name!r}, which "
                    f"this environment does not render{_known(ctx.names('PriorityClass'))}"
                )


def _workload_priority_classes(ctx: Context) -> Iterator[Finding]:
    known = ctx.names("WorkloadPriorityClass")
    for item in ctx.objects:
        for path, labels in label_maps(item.tree):
            yield from _missing(
                item,
                f"{show(path)}[{PRIORITY_CLASS_LABEL}]",
                "WorkloadPriorityClass",
                labels.get(PRIORITY_CLASS_LABEL),
                known,
            )
