"""The `health` section (schemas/health.schema.json): which nodes get quarantined, for what,
how long, and how many at most; and what inference tolerates and training never does.

Every quarantine condition is the predicate of a GPU or fabric alert (generators/model/
promql.py, the one definition of each, thresholds included) taken per node. The controller runs
exactly this text (the NodeHealthPolicy in ConfigMap gpu-health, docs/health.md) and the
alert of the condition evaluates the same text with `for:` = its duration, so promtool tests
the edges of what the controller does.

Every series of a condition query carries `node` = the Kubernetes node name: dcgm-exporter
writes it in its host label (generators/exporters.py: `Hostname` in every checked release),
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

from dataclasses import dataclass
from typing import Any, Literal

from generators.model.monitoring import Monitoring
from generators.model.overflow import Image, Resources
from generators.model.promql import ExporterQueries
from generators.model.types import Pool

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
class Condition:
    reason: str  # taint value, alert label, [a-z0-9-]
    spec_key: str  # health.conditions.<this>
    alert: str  # the alert that runs the same query
    query: str  # PromQL instant vector, one series per bad node, label node
    quarantine_after_seconds: int
    enabled: bool
    summary: str  # what "bad" means, in words, for alerts and docs


@dataclass(frozen=True)
class Cap:
    max_nodes: int
    max_percent_of_pool: int
    pools: tuple[tuple[str, int], ...] = ()  # (pool, nodes): the pools with a cap of their own

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
    """The built-in backend: the gate program running a NodeHealthPolicy."""

    namespace: str
    image: Image
    prometheus_url: str
    prometheus_timeout_seconds: float
    reconcile_interval_seconds: int
    dry_run: bool
    metrics_port: int
    resources: Resources
    pools: tuple[Pool, ...]
    conditions: tuple[Condition, ...]  # every condition (enabled or not), reason precedence
    release_after_seconds: int
    cap: Cap

    @property
    def active_conditions(self) -> tuple[Condition, ...]:
        return tuple(c for c in self.conditions if c.enabled)


@dataclass(frozen=True)
class Health:
    backend: Backend
    tolerations: tuple[Toleration, ...]  # inference tolerates, training never
    runbook_url_pattern: str
    controller: Controller | None  # backend trainyard only

    def runbook_url(self, alert: str) -> str:
        return self.runbook_url_pattern.replace("%s", alert.lower())

    @property
    def taint_keys(self) -> tuple[str, ...]:
        return tuple(t.key for t in self.tolerations)


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


def condition_query(q: ExporterQueries, spec_key: str) -> str:
    """The alerts' predicate of the condition, per node (promql.py has every definition)."""
    builders = {
        "gpuTemperature": lambda: q.gpu_too_hot(q.gpu_node),
        "xid": lambda: q.xid_requires_replacement(q.gpu_node),
        "nvlinkErrors": lambda: q.nvlink_errors(q.gpu_node),
        "infinibandPortDown": lambda: q.ports_not_active(q.port_node),
        "infinibandLinkErrors": lambda: q.ib_link_errors(q.port_node),
    }
    return builders[spec_key]()


def health_pools(raw: dict[str, Any], pools: tuple[Pool, ...]) -> tuple[Pool, ...]:
    """The pools the controller watches: as listed, else every training and shared pool."""
    names = raw.get("pools")
    if names is None:
        return tuple(p for p in pools if p.role in DEFAULT_POOL_ROLES)
    return tuple(p for p in pools if p.name in names)


def _controller(raw: dict[str, Any], pools: tuple[Pool, ...], m: Monitoring) -> Controller:
    q = ExporterQueries(m)
    conditions = tuple(
        Condition(
            reason=reason,
            spec_key=key,
            alert=alert,
            query=condition_query(q, key),
            quarantine_after_seconds=raw["conditions"][key]["quarantineAfterSeconds"],
            enabled=raw["conditions"][key]["enabled"],
            summary=summary,
        )
        for key, reason, alert, summary in CONDITIONS
    )
    image, res = raw["image"], raw["resources"]
    return Controller(
        namespace=raw["namespace"],
        image=Image(image["repository"], image["tag"], image.get("digest")),
        prometheus_url=raw.get("prometheusUrl") or m.prometheus_url,  # one default, the gate's too
        prometheus_timeout_seconds=raw["prometheusTimeoutSeconds"],
        reconcile_interval_seconds=raw["reconcileIntervalSeconds"],
        dry_run=raw["dryRun"],
        metrics_port=raw["metricsPort"],
        resources=Resources(res["cpuRequest"], res["memoryRequest"], res["cpuLimit"], res["memoryLimit"]),
        pools=health_pools(raw, pools),
        conditions=conditions,
        release_after_seconds=raw["releaseAfterSeconds"],
        cap=Cap(
            raw["cap"]["maxNodes"], raw["cap"]["maxPercentOfPool"], tuple(sorted(raw["cap"]["pools"].items()))
        ),
    )


def build_health(raw: dict[str, Any], pools: tuple[Pool, ...], monitoring: Monitoring) -> Health | None:
    """The health model; None with backend none (nothing of it is rendered)."""
    backend: Backend = raw["backend"]
    if backend == "none":
        return None
    if backend == "nvsentinel":
        tolerations = tuple(Toleration(t["key"], t["effect"]) for t in raw["nvsentinel"]["taints"])
        return Health(backend, tolerations, raw["runbookUrlPattern"], None)
    return Health(
        backend,
        (Toleration(TAINT_KEY, TAINT_EFFECT),),
        raw["runbookUrlPattern"],
        _controller(raw, pools, monitoring),
    )


def inference_tolerated_keys(health: Health | None) -> tuple[str, ...]:
    """Taint keys inference pods tolerate because of the health backend (none without one)."""
    return health.taint_keys if health else ()
