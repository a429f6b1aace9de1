"""kube-state-metrics series of a cluster shaped like an environment's pools, over a timeline.

Every node of every pool (full scale: prod has 576), labelled with its pool's nodeLabels and
carrying its pool's spec taints, reserve nodes included; the virtual nodes of the overflow
providers; one pod per busy node holding all its GPUs. Each phase of the timeline changes
values (a pod finishes, a node is cordoned), so a series never vanishes in the middle: a
backfilled series without a staleness marker would otherwise linger for the 5-minute
lookback. Only the `present` rule given to openmetrics() silences whole families for a
while (kube-state-metrics down: its series go stale).

Series and labels as kube-state-metrics v2 exports them (docs/metrics/cluster/node-metrics.md,
docs/metrics/workload/pod-metrics.md in kubernetes/kube-state-metrics).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from generators.model.environment import Environment
from generators.model.types import Pool

START = 1767225600  # 2026-01-01T00:00:00Z: fixed, so the data is the same on every run
STEP_SECONDS = 120  # one sample per series every 2 min, well inside the 5-min lookback

Value = Callable[[float], float | None]  # minute -> sample value, None: no sample


def constant(value: float) -> Value:
    return lambda _minute: value


ALWAYS_1, ALWAYS_0 = constant(1), constant(0)


def ksm_name(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]", "_", text)


@dataclass
class Series:
    name: str
    labels: dict[str, str]
    value: Value


@dataclass
class Cluster:
    """The series of one cluster; `ksm` are kube-state-metrics' job labels."""

    ksm: dict[str, str]
    minutes: int
    series: list[Series] = field(default_factory=list)

    def add(self, name: str, labels: dict[str, str], value: Value) -> None:
        self.series.append(Series(name, {**self.ksm, **labels}, value))

    def node(
        self,
        name: str,
        labels: dict[str, str],
        gpu_resource: str,
        gpus: int,
        *,
        ready: Value = ALWAYS_1,
        cordoned: Value = ALWAYS_0,
    ) -> None:
        base = {"node": name}
        self.add(
            "kube_node_labels",
            {**base, **{f"label_{ksm_name(k)}": v for k, v in labels.items()}},
            constant(1),
        )
        self.add(
            "kube_node_status_allocatable",
            {**base, "resource": ksm_name(gpu_resource), "unit": "integer"},
            constant(gpus),
        )
        self.add("kube_node_status_allocatable", {**base, "resource": "cpu", "unit": "core"}, constant(96))
        self.add("kube_node_status_condition", {**base, "condition": "Ready", "status": "true"}, ready)
        self.add(
            "kube_node_status_condition",
            {**base, "condition": "Ready", "status": "false"},
            lambda m: 1 - (ready(m) or 0),
        )
        self.add(
            "kube_node_status_condition", {**base, "condition": "Ready", "status": "unknown"}, constant(0)
        )
        self.add("kube_node_spec_unschedulable", base, cordoned)

    def taint(self, node: str, key: str, effect: str, value: str = "", *, from_minute: float = 0) -> None:
        """A taint present from `from_minute` on (kube-state-metrics: one series per taint)."""
        self.add(
            "kube_node_spec_taint",
            {"node": node, "key": key, "value": value, "effect": effect},
            lambda m: 1 if m >= from_minute else None,
        )

    def pod(
        self,
        namespace: str,
        name: str,
        node: str,
        gpu_resource: str,
        gpus: int,
        phase: Callable[[float], str],
    ) -> None:
        """One pod with one container requesting `gpus`; `phase` gives its phase per minute."""
        base = {"namespace": namespace, "pod": name, "uid": f"uid-{namespace}-{name}"}
        for each in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
            self.add(
                "kube_pod_status_phase",
                {**base, "phase": each},
                lambda m, each=each: float(phase(m) == each),  # type: ignore[misc]
            )
        self.add(
            "kube_pod_container_resource_requests",
            {
                **base,
                "container": "main",
                "node": node,
                "resource": ksm_name(gpu_resource),
                "unit": "integer",
            },
            constant(gpus),
        )

    def openmetrics(self, present: Callable[[str, float], bool]) -> str:
        """All series as OpenMetrics text (grouped by family, as the format requires);
        family `name` has samples only at minutes where present(name, minute)."""
        families: dict[str, list[Series]] = {}
        for s in self.series:
            families.setdefault(s.name, []).append(s)
        return "".join(_lines(families, self.minutes, present)) + "# EOF\n"


def _lines(
    families: dict[str, list[Series]], minutes: int, present: Callable[[str, float], bool]
) -> Iterator[str]:
    steps = minutes * 60 // STEP_SECONDS
    for name in sorted(families):
        for s in families[name]:
            text = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            for i in range(steps + 1):
                minute = i * STEP_SECONDS / 60
                if not present(name, minute):
                    continue
                value = s.value(minute)
                if value is not None:
                    yield f"{name}{{{text}}} {value:g} {START + i * STEP_SECONDS}\n"


def node_names(pool: Pool) -> list[str]:
    """Nodes of the pool, quota-backing nodes first, then its reserve nodes."""
    return [f"{pool.name}-{i:03d}" for i in range(pool.nodes)]


def reserve(pool: Pool) -> list[str]:
    return node_names(pool)[pool.schedulable_nodes :]


def add_pools(
    cluster: Cluster, env: Environment, ready: dict[str, Value], cordoned: dict[str, Value]
) -> None:
    """Every node of every pool with its pool's labels and spec taints; Ready and schedulable
    unless `ready` / `cordoned` say otherwise for it."""
    for pool in env.pools:
        for name in node_names(pool):
            cluster.node(
                name,
                dict(pool.node_labels),
                pool.gpu_resource,
                pool.gpus_per_node,
                ready=ready.get(name, ALWAYS_1),
                cordoned=cordoned.get(name, ALWAYS_0),
            )
            for t in pool.taints:
                cluster.taint(name, t.key, t.effect, t.value or "")
