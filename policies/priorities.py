"""The talk's two tiers hold in the rendered classes: every training tier outranks every
inference tier, in PriorityClass (kube-scheduler preemption) and WorkloadPriorityClass
(Kueue queue order and preemption) alike; values are within the API's limits and unique; and
the two classes of one tier carry the same value. Kueue v0.19 takes a workload's priority
from the WorkloadPriorityClass named by the job's `kueue.x-k8s.io/priority-class` label, else
from the pod template's PriorityClass (pkg/workload/priority.go in kubernetes-sigs/kueue), so
a tier whose two values differ ranks a job by whichever of the two it happened to set.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from policies.context import Context, Finding, RenderedObject

ID = "priorities"
RATIONALE = (
    "an admitted training gang must preempt inference on its nodes and never the "
    "reverse, so training classes outrank inference classes in both kinds, unambiguously"
)
SEVERITY = "error"
ROLE_LABEL = "trainyard.dev/tier-role"
# scheduling.k8s.io/v1: user classes may not exceed 1e9 (higher is reserved for system-*).
POD_PRIORITY_MAX = 1_000_000_000
INT32 = (-(2**31), 2**31 - 1)


def _value(item: RenderedObject) -> int | None:
    value: Any = item.obj.get("value")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _role(ctx: Context, item: RenderedObject) -> str | None:
    """Tier role from the model by name, else from the label the generator sets."""
    for tier in ctx.env.tiers:
        if tier.name == item.name:
            return tier.role
    role = item.labels.get(ROLE_LABEL)
    return str(role) if role in ("training", "inference") else None


def check(ctx: Context) -> Iterable[Finding]:
    for kind in ("PriorityClass", "WorkloadPriorityClass"):
        classes = sorted(ctx.of_kind(kind), key=lambda i: i.name)
        yield from _limits(kind, classes)
        yield from _unique(classes)
        yield from _tiers(ctx, classes)
    yield from _one_scale(ctx)


def _limits(kind: str, classes: list[RenderedObject]) -> Iterator[Finding]:
    low, high = INT32[0], POD_PRIORITY_MAX if kind == "PriorityClass" else INT32[1]
    for item in classes:
        value = _value(item)
        if value is None:
            yield item.finding(f"value {item.obj.get('value')!r} is not an integer")
        elif not low <= value <= high:
            yield item.finding(f"value {value} is outside [{low}, {high}]")
        if kind == "PriorityClass" and item.name.startswith("system-"):
            yield item.finding("the system- prefix is reserved for the cluster's own classes")


def _unique(classes: list[RenderedObject]) -> Iterator[Finding]:
    seen: dict[int, RenderedObject] = {}
    for item in classes:
        value = _value(item)
        if value is None:
            continue
        if value in seen:
            yield item.finding(
                f"value {value} equals {seen[value].kind} {seen[value].name!r}: "
                "equal tiers cannot preempt each other"
            )
        else:
            seen[value] = item


def _tiers(ctx: Context, classes: list[RenderedObject]) -> Iterator[Finding]:
    training = [(v, i) for i in classes if _role(ctx, i) == "training" and (v := _value(i)) is not None]
    if not training:
        return
    lowest, lowest_item = min(training, key=lambda pair: pair[0])
    for item in classes:
        value = _value(item)
        if _role(ctx, item) == "inference" and value is not None and value >= lowest:
            yield item.finding(
                f"inference tier value {value} is not below training tier "
                f"{lowest_item.name!r} ({lowest}): training must preempt inference, not the reverse"
            )


def _one_scale(ctx: Context) -> Iterator[Finding]:
    workload = {item.name: item for item in ctx.of_kind("WorkloadPriorityClass")}
    for pod_class in sorted(ctx.of_kind("PriorityClass"), key=lambda i: i.name):
        twin = workload.get(pod_class.name)
        if twin is None:
            continue
        pod_value, workload_value = _value(pod_class), _value(twin)
        if pod_value is not None and workload_value is not None and pod_value != workload_value:
            yield twin.finding(
                f"value {workload_value} differs from PriorityClass {pod_class.name!r} ({pod_value}): "
                "Kueue ranks a job by either, so one tier must have one value"
            )
