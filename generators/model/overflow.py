"""The overflow model: providers in fill order, their staggered gate bands, the free-GPU query.

Every number the overflow objects carry (per-provider thresholds and hold times, affinity
weights, the default PromQL, the mock capacity) is derived here, once. Settings map onto
fields by fromspec.py's rule; the derived fields are computed in build_overflow.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from generators.model.fromspec import derived, from_spec, setting
from generators.model.monitoring import Monitoring
from generators.model.promql import Inventory
from generators.model.types import Image, Pool, Resources, Tier
from generators.promql.vocabulary import match_none
from generators.providers import CONTRACTS, PROVIDER_TAINT_KEYS, Contract, ProviderInput, VirtualNodeTaint

NODE_PREFIX = "vk-"  # virtual node of provider p is vk-<p>; the default query excludes these
# Set by the rendered MutatingAdmissionPolicy on every vk-<p> (and by interLink itself from
# NodeLabels); no real node carries it, so "DoesNotExist" selects the in-cluster nodes.
PROVIDER_LABEL = "trainyard.dev/provider"
GATE = "overflow-gate"  # the gate's Deployment, Service (so Prometheus' job label) and Lease
GATE_TAINT_VALUE = "closed"
# What the inference pod snippet may tolerate (NoSchedule): the taints supported providers'
# nodes really carry (generators/providers/), nothing else.
INFERENCE_TOLERATED_TAINT_KEYS = PROVIDER_TAINT_KEYS
# A pod series older than this is a pod gone (kube-state-metrics scrapes succeed, `up` is
# guarded, and it no longer exports the pod): several scrape intervals, under the lookback.
FRESH_SECONDS = 120
INFERENCE_ROLES = ("inference", "shared")  # pool roles whose nodes inference may use
IN_CLUSTER_WEIGHT = 100  # node-affinity weight of real nodes: always above any provider
PROVIDER_WEIGHT_SPAN = 50  # the preferred provider's weight; the others share it downwards

OnUnavailable = Literal["hold", "close", "open"]


@dataclass(frozen=True)
class GateBand:
    """One provider's hysteresis band (GPU counts are whole GPUs, times seconds)."""

    close_when_free_gpus_at_least: int
    close_after_seconds: int
    open_when_free_gpus_below: int
    open_after_seconds: int


@dataclass(frozen=True)
class SecretRef:
    name: str
    key: str  # mounted as a file of this name in the provider's credentials directory


def _config_copy(raw: Mapping[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(json.dumps(raw))  # a private deep copy, keys as written
    return config


@dataclass(frozen=True)
class Provider:
    name: str
    type: str
    rank: int = field(metadata=derived())  # 0 = preferred: fills first, closes last
    image: Image
    credentials: SecretRef = field(metadata=setting("credentialsSecret"))
    # the environment's provider config, as written
    config: Mapping[str, Any] = field(metadata=setting(convert=_config_copy))
    gpus: int
    gpu_model: str
    gpu_resource: str
    cost_per_gpu_hour_usd: float = field(metadata=setting(convert=float))
    preference: int
    band: GateBand = field(metadata=derived())  # from the gate's settings and the rank
    # preferredDuringScheduling weight in the inference snippet
    affinity_weight: int = field(metadata=derived())
    resources: Resources

    @property
    def node_name(self) -> str:
        return f"{NODE_PREFIX}{self.name}"

    @property
    def contract(self) -> Contract:
        return CONTRACTS[self.type]

    @property
    def contract_input(self) -> ProviderInput:
        return ProviderInput(
            self.name,
            self.node_name,
            self.gpus,
            self.gpu_resource,
            self.gpu_model,
            self.config,
            self.credentials.key,
            PROVIDER_LABEL,
        )

    @property
    def node_taint(self) -> VirtualNodeTaint:
        """The taint the provider's node really registers with."""
        return self.contract.taint(self.contract_input)

    @property
    def node_labels(self) -> dict[str, str]:
        """What the gate's nodeSelector matches: a label the provider's program sets itself
        (type=virtual-kubelet for node-cli, virtual-node.interlink/type for interLink) and
        the provider label. The one place the selector is derived."""
        return self.contract.selector_labels(self.contract_input)

    @property
    def max_usd_per_hour(self) -> float:
        """Spend with every advertised GPU busy: the worst case the gate guards against."""
        return round(self.gpus * self.cost_per_gpu_hour_usd, 2)


@dataclass(frozen=True)
class Gate:
    # the spec's, else the in-cluster Prometheus (Monitoring.prometheus_url, as health's)
    prometheus_url: str = field(metadata=derived("prometheusUrl"))
    prometheus_timeout_seconds: float
    free_gpus_query: str = field(metadata=derived("freeGpusQuery"))  # the spec's, else default_query
    reconcile_interval_seconds: int
    on_prometheus_unavailable: OnUnavailable
    taint_key: str
    image: Image
    dry_run: bool
    metrics_port: int
    resources: Resources


@dataclass(frozen=True)
class MigrateBack:
    # DefaultEvictor's priorityThreshold.value: only pods with a LOWER priority are evicted.
    # One above the highest inference tier, so every training tier (validation keeps them all
    # above every inference tier) and the machinery (system-cluster-critical) are never evicted.
    priority_threshold: int = field(metadata=derived())
    # RemovePodsViolatingNodeTaints namespaces.include: every inference service's
    namespaces: tuple[str, ...] = field(metadata=derived())
    max_pods_to_evict_per_node: int
    max_pods_to_evict_per_namespace: int
    max_pods_to_evict_total: int
    descheduling_interval: str
    min_pod_age: str
    image: Image
    dry_run: bool
    resources: Resources


@dataclass(frozen=True)
class InferenceService:
    namespace: str
    deployment: str
    tier: str
    pod_selector: Mapping[str, str]
    min_replicas: int
    max_replicas: int
    metric_name: str = field(metadata=setting("metric.name"))
    metric_selector: Mapping[str, str] = field(metadata=setting("metric.selector"))
    metric_average_value: str = field(metadata=setting("metric.averageValue"))
    max_unavailable: int | str
    scale_down_stabilization_seconds: int


@dataclass(frozen=True)
class Overflow:
    namespace: str
    providers: tuple[Provider, ...]  # fill order: preferred first (built by build_overflow)
    gate: Gate
    migrate_back: MigrateBack
    extra_namespaces: tuple[str, ...]
    inference: tuple[InferenceService, ...]
    # ipBlocks allowed to the virtual-kubelets' kubelet API (the API server's egress addresses)
    kubelet_api_source_cidrs: tuple[str, ...]

    @property
    def inference_namespaces(self) -> tuple[str, ...]:
        return tuple(sorted({s.namespace for s in self.inference}))

    @property
    def virtual_nodes(self) -> tuple[str, ...]:
        return tuple(p.node_name for p in self.providers)

    @property
    def max_usd_per_hour(self) -> float:
        """Spend with every provider's every advertised GPU busy."""
        return round(sum(p.max_usd_per_hour for p in self.providers), 2)


def fill_order(raw_providers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Preferred first: lowest preference, then cheapest, then name (deterministic)."""
    return sorted(raw_providers, key=lambda p: (p["preference"], p["costPerGpuHourUsd"], p["name"]))


def stagger_step(gate: dict[str, Any], providers: int) -> int:
    """GPUs each step down the fill order lowers both thresholds by."""
    explicit: int | None = gate.get("staggerFreeGpus")
    return explicit if explicit is not None else gate["openWhenFreeGpusBelow"] // providers


def band(gate: dict[str, Any], rank: int, step: int) -> GateBand:
    """Less-preferred providers open at fewer free GPUs (and later) and close at fewer: the
    preferred one opens first and closes last, so the cheapest capacity is used first and
    the dearest is given back first."""
    return GateBand(
        close_when_free_gpus_at_least=gate["closeWhenFreeGpusAtLeast"] - rank * step,
        close_after_seconds=gate["closeAfterSeconds"],
        open_when_free_gpus_below=gate["openWhenFreeGpusBelow"] - rank * step,
        open_after_seconds=gate["openAfterSeconds"] + rank * gate["staggerOpenSeconds"],
    )


def affinity_weight(rank: int, providers: int) -> int:
    """Preferred provider PROVIDER_WEIGHT_SPAN, the others evenly less, never below 1."""
    return max(1, PROVIDER_WEIGHT_SPAN * (providers - rank) // providers)


def blocks_inference(key: str, effect: str) -> bool:
    """Whether a taint keeps inference pods off a node. Inference pods tolerate
    INFERENCE_TOLERATED_TAINT_KEYS (the pod snippet) and their own pool's declared taints;
    PreferNoSchedule only steers the scheduler away, it never refuses a pod."""
    return effect != "PreferNoSchedule" and key not in INFERENCE_TOLERATED_TAINT_KEYS


def inference_pools(pools: tuple[Pool, ...]) -> tuple[Pool, ...]:
    """Pools whose GPUs inference can use: role inference or shared. A pool's declared taints
    do not rule it out: they say what its nodes carry and what the pods meant for it
    tolerate (managed GPU pools taint nvidia.com/gpu=present:NoSchedule and add that
    toleration to GPU pods through ExtendedResourceToleration; docs/overflow.md). Training
    pools (and their reserve nodes) never count, however idle: inference cannot go there."""
    return tuple(p for p in pools if p.role in INFERENCE_ROLES)


def pool_tolerated_keys(pools: tuple[Pool, ...]) -> tuple[str, ...]:
    """Keys of the taints the inference pools declare: tolerated by the pods that use them."""
    return tuple(
        sorted({t.key for p in inference_pools(pools) for t in p.taints if blocks_inference(t.key, t.effect)})
    )


def default_query(
    inventory: Inventory, virtual_nodes: tuple[str, ...], health_keys: tuple[str, ...] = ()
) -> str:
    """Free GPUs inference can use right now, from kube-state-metrics, or NO sample when the
    inputs are missing or stale (so the gate's onPrometheusUnavailable applies).

    Per node of an inference pool (never a virtual node): allocatable GPUs minus the GPU
    requests of live (Pending or Running) pods bound to it, at least 0. Only a node that is
    Ready, not cordoned and free of NoSchedule/NoExecute taints inference does not tolerate
    contributes; the pool's other nodes contribute 0. No `or vector(0)`: absence must never
    read as a number, least of all as "plenty free". A node quarantined by the health backend
    (`health_keys`: trainyard.dev/gpu-health, or NVSentinel's configured taints) still counts:
    inference tolerates those taints and rides on the bad GPUs (a cordon still excludes it)."""
    pools = inference_pools(inventory.pools)
    if not pools:
        raise ValueError("no pool inference can use: set overflow.gate.freeGpusQuery")
    inv = inventory
    tolerated = (*INFERENCE_TOLERATED_TAINT_KEYS, *health_keys, *pool_tolerated_keys(pools))
    gpu = inv.gpu_resources_ksm(pools)
    real = match_none("node", list(virtual_nodes))
    allocatable = inv.ksm("kube_node_status_allocatable", gpu, real)
    capacity = (
        f"(sum by (node) (max by (node, resource) ({allocatable})) and on (node) {inv.nodes_of_pools(pools)})"
    )
    # max by (...): identical series from two kube-state-metrics replicas count once.
    requests = inv.ksm("kube_pod_container_resource_requests", gpu)
    # Only pods kube-state-metrics exported within FRESH_SECONDS: a Prometheus restarted
    # after a pod was deleted never marks its series stale (new scrape loops), and the
    # lookback (5 min) would keep counting its GPUs.
    scraped = f"max by (namespace, pod) (timestamp({inv.ksm('kube_pod_status_phase')}))"
    fresh = f"{inv.active_pods()} and on (namespace, pod) (time() - {scraped} < {FRESH_SECONDS})"
    used = (
        f"sum by (node) (max by (namespace, pod, container, node, resource) ({requests})"
        f" * on (namespace, pod) group_left () ({fresh}))"
    )
    # A node without live GPU pods has no `used` series: it uses 0 (per node, not a total).
    free = f"clamp_min({capacity} - on (node) ({used} or on (node) {capacity} * 0), 0)"
    schedulable = (
        f"({free} and on (node) ({inv.usable_nodes()}) unless on (node) {inv.tainted_nodes(tolerated)})"
    )
    # Families that always have series in a live cluster (every node, every pod): if one
    # is missing, kube-state-metrics is not telling us, and guessing would be wrong either
    # way. kube_node_spec_taint is legitimately empty, so it is not guarded.
    present = inv.ksm_present(
        "kube_pod_status_phase",
        "kube_pod_container_resource_requests",
        "kube_node_status_condition",
        "kube_node_spec_unschedulable",
    )
    return f"sum({schedulable} or on (node) {capacity} * 0) and on () {inv.ksm_up()} and on () {present}"


def _providers(raw: dict[str, Any]) -> tuple[Provider, ...]:
    ordered = fill_order(raw["providers"])
    step = stagger_step(raw["gate"], len(ordered))
    return tuple(
        from_spec(
            Provider,
            p,
            {
                "rank": rank,
                "band": band(raw["gate"], rank, step),
                "affinity_weight": affinity_weight(rank, len(ordered)),
            },
        )
        for rank, p in enumerate(ordered)
    )


def migrate_back_priority_threshold(tiers: tuple[Tier, ...]) -> int:
    """Evict only what ranks as inference: one above the highest inference tier."""
    return max(t.value for t in tiers if t.role == "inference") + 1


def build_overflow(
    raw: dict[str, Any] | None,
    pools: tuple[Pool, ...],
    monitoring: Monitoring,
    tiers: tuple[Tier, ...],
    health_keys: tuple[str, ...] = (),
) -> Overflow | None:
    """The overflow model, or None when the environment has no overflow section.
    `health_keys`: taint keys of quarantined nodes inference tolerates (model/health.py)."""
    if raw is None:
        return None
    providers = _providers(raw)
    nodes = tuple(p.node_name for p in providers)
    query = raw["gate"].get("freeGpusQuery") or default_query(
        Inventory(monitoring, pools), nodes, health_keys
    )
    return from_spec(
        Overflow,
        raw,
        {
            "providers": providers,
            "gate.free_gpus_query": query,
            "gate.prometheus_url": raw["gate"].get("prometheusUrl") or monitoring.prometheus_url,
            "migrate_back.priority_threshold": migrate_back_priority_threshold(tiers),
            "migrate_back.namespaces": tuple(sorted({s["namespace"] for s in raw["inference"]})),
        },
    )
