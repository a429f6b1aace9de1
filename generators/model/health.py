"""The `health` section (schemas/health.schema.json): which nodes get quarantined, for what,
how long, and how many at most; and what inference tolerates and training never does.

Every quarantine condition is the predicate of a GPU or fabric alert (generators/model/
promql.py, the one definition of each, thresholds included) taken per node. The controller runs
exactly this text (the NodeHealthPolicy in ConfigMap gpu-health-policy, docs/health.md) and the
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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from generators.model.fromspec import derived, from_spec, inline, setting
from generators.model.monitoring import Monitoring
from generators.model.promql import ExporterQueries
from generators.model.types import Image, Pool, Resources

Backend = Literal["trainyard", "nvsentinel", "none"]

TAINT_KEY = "trainyard.dev/gpu-health"  # the value is the reason; effect always NoSchedule
TAINT_EFFECT = "NoSchedule"
REASON_ANNOTATION = "trainyard.dev/gpu-health-reason"
SINCE_ANNOTATION = "trainyard.dev/gpu-health-since"
POOL_LABEL = "trainyard.dev/pool"  # the controller may touch only nodes carrying this key
# the program: Deployment, ServiceAccount, Lease, Service, job label (its ConfigMap is NAME-policy)
NAME = "gpu-health"
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

    @property
    def taint_keys(self) -> tuple[str, ...]:
        return tuple(t.key for t in self.tolerations)


@dataclass(frozen=True)
class ConditionKind:
    """A quarantine condition the controller knows: what the spec calls it, the reason it
    writes, what "bad" means in words, and its per-node predicate (promql.py's vocabulary)."""

    spec_key: str  # health.conditions.<this>
    reason: str  # taint value and alert label
    summary: str
    query: Callable[[ExporterQueries], str]

    @property
    def alert(self) -> str:
        """Each condition's alert is GpuHealth<SpecKey> (docs/health.md's runbooks)."""
        return "GpuHealth" + self.spec_key[0].upper() + self.spec_key[1:]


# spec order = reason precedence
CONDITIONS: tuple[ConditionKind, ...] = (
    ConditionKind(
        "gpuTemperature",
        "gpu-temperature",
        "a GPU above the temperature limit",
        lambda q: q.gpu_too_hot(q.gpu_node),
    ),
    ConditionKind(
        "xid", "xid", "an XID that means replace", lambda q: q.xid_requires_replacement(q.gpu_node)
    ),
    ConditionKind(
        "nvlinkErrors", "nvlink", "NVLink errors above the limit", lambda q: q.nvlink_errors(q.gpu_node)
    ),
    ConditionKind(
        "infinibandPortDown",
        "infiniband-port-down",
        "an InfiniBand port not active",
        lambda q: q.ports_not_active(q.port_node),
    ),
    ConditionKind(
        "infinibandLinkErrors",
        "infiniband-link-errors",
        "InfiniBand link errors above the limit",
        lambda q: q.ib_link_errors(q.port_node),
    ),
)


def health_pools(raw: dict[str, Any], pools: tuple[Pool, ...]) -> tuple[Pool, ...]:
    """The pools the controller watches: as listed, else every training and shared pool."""
    names = raw.get("pools")
    if names is None:
        return tuple(p for p in pools if p.role in DEFAULT_POOL_ROLES)
    return tuple(p for p in pools if p.name in names)


def _controller(raw: dict[str, Any], pools: tuple[Pool, ...], m: Monitoring) -> Controller:
    q = ExporterQueries(m)
    conditions = tuple(
        from_spec(
            Condition,
            raw["conditions"][kind.spec_key],
            {
                "reason": kind.reason,
                "spec_key": kind.spec_key,
                "alert": kind.alert,
                "query": kind.query(q),
                "summary": kind.summary,
            },
        )
        for kind in CONDITIONS
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
