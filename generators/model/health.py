"""The `health` section (schemas/health.schema.json): which nodes get quarantined, for what,
how long, and how many at most; and what inference tolerates and training never does.

Every quarantine condition is a per-node PromQL query derived here, once, from the
monitoring thresholds (the same limits the GPU and fabric alerts use). The controller runs
exactly this text (the NodeHealthPolicy in ConfigMap gpu-health, docs/health.md) and the
alert of the condition evaluates the same text with `for:` = its duration, so promtool tests
the edges of what the controller does.

Every series of a condition query carries `node` = the Kubernetes node name: dcgm-exporter
writes it in its host label (generators/model/exporters.py: `Hostname` in every checked release),
node_exporter in `monitoring.nodeExporterHostLabel` (kube-prometheus-stack relabels the pod's
node name into `instance`), and label_replace copies it, as GPUMissing does.

NVSentinel (backend nvsentinel), read in NVIDIA/NVSentinel on main (no release tag names
these files; commits given): fault-quarantine's rule-set has a `taint` {key, value, effect}
and a `cordon` {shouldCordon} table (fault-quarantine/pkg/config/config.go @1197f6a:
RuleSet, Taint, Cordon). The shipped rule-sets (distros/kubernetes/nvsentinel/charts/
fault-quarantine/values.yaml @0e0829e: "NIC fatal error", "GPU fatal error", "NVSwitch
fatal error", "CSP health monitor fatal error") set `shouldCordon = true` and NO taint;
docs/INTEGRATIONS.md @9087c1f says taints are opt-in and named by the operator, its
examples nvidia.com/gpu-xid-error, nvidia.com/gpu-nvlink-error, nvidia.com/syslog-xid-error,
nvidia.com/gpu-error (value "true", NoSchedule). Its bookkeeping annotations
(fault-quarantine/pkg/common/common.go @569d1eb: quarantineHealthEvent,
quarantineHealthEventIsCordoned, ...) say what it did. So the keys an environment tolerates
are the ones its own rule-sets set, written in `health.nvsentinel.taints`; the cordon
(spec.unschedulable) is not a taint and is not tolerated (docs/health.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from generators.model.exporters import (
    ACTIVE_STATE,
    DCGM_BLANK_MIN,
    LINK_ERROR_COUNTERS,
    LINK_UP_PHYSICAL_STATE,
    NVLINK_COUNTERS,
)
from generators.model.fromspec import derived, from_spec, inline, setting
from generators.model.monitoring import Monitoring
from generators.model.promql import quote, selector
from generators.model.types import Image, Pool, Resources

Backend = Literal["trainyard", "nvsentinel", "none"]

TAINT_KEY = "trainyard.dev/gpu-health"  # the value is the reason; effect always NoSchedule
TAINT_EFFECT = "NoSchedule"
REASON_ANNOTATION = "trainyard.dev/gpu-health-reason"
SINCE_ANNOTATION = "trainyard.dev/gpu-health-since"
POOL_LABEL = "trainyard.dev/pool"  # the controller may touch only nodes carrying this key
NAME = "gpu-health"  # ConfigMap, Deployment, ServiceAccount, Lease, Service, job label
DEFAULT_POOL_ROLES = ("training", "shared")


@dataclass(frozen=True)
class Toleration:
    """A taint key inference pods tolerate (operator Exists) and training pods may not."""

    key: str
    effect: str


@dataclass(frozen=True)
class NvSentinel:
    taints: tuple[Toleration, ...]  # what its fault-quarantine rule-sets set


@dataclass(frozen=True)
class Condition:
    """One quarantine condition: its two settings (schema $defs/condition) mapped by rule, the
    rest derived from CONDITIONS and the monitoring thresholds."""

    reason: str = field(metadata=derived())  # taint value, alert label, [a-z0-9-]
    spec_key: str = field(metadata=derived())  # health.conditions.<this>
    alert: str = field(metadata=derived())  # the alert that runs the same query
    # PromQL instant vector, one series per bad node, label node
    query: str = field(metadata=derived())
    quarantine_after_seconds: int
    enabled: bool
    summary: str = field(metadata=derived())  # what "bad" means, in words, for alerts and docs


def _sorted_caps(pools: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(pools.items()))


@dataclass(frozen=True)
class Cap:
    max_nodes: int
    max_percent_of_pool: int
    # (pool, nodes): the pools with a cap of their own, by name
    pools: tuple[tuple[str, int], ...] = field(default=(), metadata=setting(convert=_sorted_caps))

    def own(self, pool: Pool) -> int | None:
        """The pool's own cap in nodes (rendered into the NodeHealthPolicy), if it has one."""
        return dict(self.pools).get(pool.name)

    def pool_cap(self, pool: Pool) -> int:
        return self.nodes_cap(pool.name, pool.nodes)

    def nodes_cap(self, pool: str, nodes: int) -> int:
        """Nodes of a pool of `nodes` that may be quarantined at once: its own cap, else
        floor(pct * nodes / 100) but at least one node. The controller computes the same from
        the nodes it sees (gate/trainyard_gate/health/policy.py, Cap.pool_cap)."""
        own = dict(self.pools).get(pool)
        if own is not None:
            return min(own, nodes)
        return max(1, self.max_percent_of_pool * nodes // 100) if nodes else 0


@dataclass(frozen=True)
class Controller:
    """The built-in backend: the gate program running a NodeHealthPolicy. Its settings sit in
    the health section beside `backend` (Health.controller is inline)."""

    namespace: str
    image: Image
    # the spec's, else the in-cluster Prometheus (Monitoring.prometheus_url, as the gate's)
    prometheus_url: str = field(metadata=derived("prometheusUrl"))
    prometheus_timeout_seconds: float
    reconcile_interval_seconds: int
    dry_run: bool
    metrics_port: int
    resources: Resources
    pools: tuple[Pool, ...] = field(metadata=derived("pools"))  # as listed, else DEFAULT_POOL_ROLES'
    # every condition (enabled or not), reason precedence; each built by rule (Condition)
    conditions: tuple[Condition, ...] = field(metadata=derived("conditions"))
    release_after_seconds: int
    cap: Cap

    @property
    def active_conditions(self) -> tuple[Condition, ...]:
        return tuple(c for c in self.conditions if c.enabled)


@dataclass(frozen=True)
class Health:
    backend: Backend
    runbook_url_pattern: str
    nvsentinel: NvSentinel  # read with backend nvsentinel only
    controller: Controller | None = field(metadata=inline())  # backend trainyard only

    @property
    def tolerations(self) -> tuple[Toleration, ...]:
        """What inference tolerates and training never: the built-in taint, or the taints of
        NVSentinel's rule-sets."""
        if self.backend == "nvsentinel":
            return self.nvsentinel.taints
        return (Toleration(TAINT_KEY, TAINT_EFFECT),)

    def runbook_url(self, alert: str) -> str:
        return self.runbook_url_pattern.replace("%s", alert.lower())

    @property
    def taint_keys(self) -> tuple[str, ...]:
        return tuple(t.key for t in self.tolerations)


class ConditionQueries:
    """The per-node condition queries of one environment."""

    def __init__(self, m: Monitoring) -> None:
        self.m = m

    def dcgm(self, metric: str, *extra: str) -> str:
        return metric + selector(self.m.selectors.dcgm, *extra)

    def ib(self, metric: str) -> str:
        devices = f"device=~{quote(self.m.infiniband_devices)}"
        return metric + selector(self.m.selectors.node_exporter, devices)

    @staticmethod
    def to_node(expr: str, host_label: str) -> str:
        """`expr` per node: its host label copied into `node`, one series per node."""
        return f'max by (node) (label_replace({expr}, "node", "$1", {quote(host_label)}, "(.*)"))'

    def gpu(self, expr: str) -> str:
        return self.to_node(expr, self.m.host_label)

    def port(self, expr: str) -> str:
        return self.to_node(expr, self.m.node_exporter_host_label)

    def increase(self, series: str) -> str:
        """Increase over errorWindow, ignoring counters that read a DCGM blank."""
        return f"(increase({series}[{self.m.alerts.error_window}]) and ({series} < {DCGM_BLANK_MIN}))"

    @staticmethod
    def union(label: str, exprs: dict[str, str]) -> str:
        return " or ".join(
            f'label_replace({e}, {quote(label)}, {quote(v)}, "", "")' for v, e in exprs.items()
        )

    def temperature(self) -> str:
        temp = self.dcgm("DCGM_FI_DEV_GPU_TEMP")
        plausible = f"({temp} < {self.m.gpu_temp_plausible_max_celsius})"
        return f"{self.gpu(plausible)} > {self.m.gpu_temp_limit_celsius}"

    def xid(self) -> str:
        codes = "|".join(str(c) for c in self.m.xid_replace_codes)
        series = self.dcgm("DCGM_EXP_XID_ERRORS_COUNT", f"xid=~{quote(codes)}")
        return f"{self.gpu(f'max_over_time({series}[{self.m.alerts.error_window}])')} > 0"

    def nvlink(self) -> str:
        h = self.m.host_label
        increases = {k: self.increase(self.dcgm(v)) for k, v in NVLINK_COUNTERS.items()}
        per_gpu = f"sum by ({h}, gpu, UUID, counter) ({self.union('counter', increases)})"
        return f"{self.gpu(per_gpu)} > {self.m.alerts.nvlink_errors_per_window}"

    def ib_port_down(self) -> str:
        down = (
            f"({self.ib('node_infiniband_state_id')} != {ACTIVE_STATE} "
            f"or {self.ib('node_infiniband_physical_state_id')} != {LINK_UP_PHYSICAL_STATE})"
        )
        return self.port(down)

    def ib_link_errors(self) -> str:
        h = self.m.node_exporter_host_label
        window = self.m.alerts.error_window
        increases = {k: f"increase({self.ib(v)}[{window}])" for k, v in LINK_ERROR_COUNTERS.items()}
        per_port = f"sum by ({h}, device, port, counter) ({self.union('counter', increases)})"
        return f"{self.port(per_port)} > {self.m.alerts.infiniband_errors_per_window}"


# spec key -> (reason, alert, what "bad" means, query builder); spec order = reason precedence
CONDITIONS: tuple[tuple[str, str, str, str], ...] = (
    ("gpuTemperature", "gpu-temperature", "GpuHealthGpuTemperature", "a GPU above the temperature limit"),
    ("xid", "xid", "GpuHealthXid", "an XID that means replace"),
    ("nvlinkErrors", "nvlink", "GpuHealthNvlinkErrors", "NVLink errors above the limit"),
    (
        "infinibandPortDown",
        "infiniband-port-down",
        "GpuHealthInfinibandPortDown",
        "an InfiniBand port not active",
    ),
    (
        "infinibandLinkErrors",
        "infiniband-link-errors",
        "GpuHealthInfinibandLinkErrors",
        "InfiniBand link errors above the limit",
    ),
)


def condition_query(q: ConditionQueries, spec_key: str) -> str:
    builders = {
        "gpuTemperature": q.temperature,
        "xid": q.xid,
        "nvlinkErrors": q.nvlink,
        "infinibandPortDown": q.ib_port_down,
        "infinibandLinkErrors": q.ib_link_errors,
    }
    return builders[spec_key]()


def health_pools(raw: dict[str, Any], pools: tuple[Pool, ...]) -> tuple[Pool, ...]:
    """The pools the controller watches: as listed, else every training and shared pool."""
    names = raw.get("pools")
    if names is None:
        return tuple(p for p in pools if p.role in DEFAULT_POOL_ROLES)
    return tuple(p for p in pools if p.name in names)


def _controller(raw: dict[str, Any], pools: tuple[Pool, ...], m: Monitoring) -> Controller:
    q = ConditionQueries(m)
    conditions = tuple(
        from_spec(
            Condition,
            raw["conditions"][key],
            {
                "reason": reason,
                "spec_key": key,
                "alert": alert,
                "query": condition_query(q, key),
                "summary": summary,
            },
        )
        for key, reason, alert, summary in CONDITIONS
    )
    return from_spec(
        Controller,
        raw,
        {
            "prometheus_url": raw.get("prometheusUrl") or m.prometheus_url,  # one default, the gate's too
            "pools": health_pools(raw, pools),
            "conditions": conditions,
        },
    )


def build_health(raw: dict[str, Any], pools: tuple[Pool, ...], monitoring: Monitoring) -> Health | None:
    """The health model; None with backend none (nothing of it is rendered)."""
    if raw["backend"] == "none":
        return None
    controller = _controller(raw, pools, monitoring) if raw["backend"] == "trainyard" else None
    health: Health = from_spec(Health, raw, {"controller": controller})
    return health


def inference_tolerated_keys(health: Health | None) -> tuple[str, ...]:
    """Taint keys inference pods tolerate because of the health backend (none without one)."""
    return health.taint_keys if health else ()
