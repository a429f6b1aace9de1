"""Synthetic series for every metric family the dashboards use, as OpenMetrics text for
`promtool tsdb create-blocks-from openmetrics`.

One small fake cluster per environment (one node per pool, two GPUs each, one pod per
node, every ClusterQueue, every overflow provider), labelled the way the real exporters
label their series, with values that make every panel show something (one GPU over the
temperature limit, an XID, errors that increase).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from generators.components.monitoring import dcgm_counters
from generators.model.environment import Environment
from generators.model.types import Pool
from tests.monitoring.alert_cases import equality_matchers

START = 1767225600  # 2026-01-01T00:00:00Z: fixed, so the data is the same on every run
STEP = 60  # seconds between samples
SAMPLES = 61  # one hour
END = START + STEP * (SAMPLES - 1)
GPUS_PER_NODE = 2  # enough for per-GPU panels; counts against perNode are not checked here

GAUGE_VALUES = {
    "DCGM_FI_DEV_GPU_TEMP": 65.0,
    "DCGM_FI_DEV_MEMORY_TEMP": 70.0,
    "DCGM_FI_DEV_POWER_USAGE": 520.0,
    "DCGM_FI_DEV_SM_CLOCK": 1980.0,
    "DCGM_FI_DEV_GPU_UTIL": 100.0,
    "DCGM_FI_PROF_SM_ACTIVE": 0.6,
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.3,
    "DCGM_FI_PROF_NVLINK_TX_BYTES": 1e11,
    "DCGM_FI_PROF_NVLINK_RX_BYTES": 1e11,
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": 0.0,
    "DCGM_FI_DEV_XID_ERRORS": 0.0,
}
DCGM_EVENT_COUNTS = {
    "DCGM_EXP_XID_ERRORS_COUNT": ("xid", "79"),
    "DCGM_EXP_CLOCK_EVENTS_COUNT": ("clock_event", "sw_thermal"),
}
IB_COUNTERS = (
    "port_data_transmitted_bytes_total",
    "port_data_received_bytes_total",
    "port_packets_transmitted_total",
    "port_packets_received_total",
    "port_transmit_wait_total",
    "port_discards_transmitted_total",
    "symbol_error_total",
    "link_error_recovery_total",
    "link_downed_total",
    "port_errors_received_total",
    "excessive_buffer_overrun_errors_total",
    "local_link_integrity_errors_total",
    "vl15_dropped_total",
)
IB_GAUGES = {"state_id": 4.0, "physical_state_id": 5.0, "rate_bytes_per_second": 5e10}
WAIT_BUCKETS = ("1", "10", "60", "600", "+Inf")


@dataclass
class Series:
    name: str
    labels: dict[str, str]
    slope: float = 0.0  # increase per sample (counters)
    base: float = 0.0

    def lines(self) -> Iterator[str]:
        text = ",".join(f'{k}="{v}"' for k, v in sorted(self.labels.items()))
        for i in range(SAMPLES):
            yield f"{self.name}{{{text}}} {self.base + self.slope * i:g} {START + STEP * i}"


@dataclass
class Cluster:
    env: Environment
    series: list[Series] = field(default_factory=list)

    def add(self, name: str, labels: dict[str, str], *, base: float = 0.0, slope: float = 0.0) -> None:
        # The environments share one Prometheus: this label keeps their series apart.
        self.series.append(Series(name, {**labels, "synthetic_env": self.env.name}, slope, base))

    def job(self, which: str) -> dict[str, str]:
        sel = self.env.monitoring.selectors
        return equality_matchers(
            {"dcgm": sel.dcgm, "node": sel.node_exporter, "ksm": sel.kube_state_metrics, "kueue": sel.kueue}[
                which
            ]
        )

    def node_name(self, pool: Pool) -> str:
        return f"{self.env.name}-{pool.name}-0"

    def namespace_of(self, pool: Pool) -> str:
        return next(ns for t in self.env.teams if t.shares.get(pool.name, 0) > 0 for ns in t.namespaces)


def ksm_sanitize(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]", "_", text)


def gpu_series(c: Cluster, pool: Pool) -> None:
    m, node = c.env.monitoring, c.node_name(pool)
    ns = c.namespace_of(pool)
    for gpu in range(GPUS_PER_NODE):
        labels = {
            **c.job("dcgm"),
            m.host_label: node,
            "gpu": str(gpu),
            "UUID": f"GPU-{node}-{gpu}",
            "modelName": pool.gpu_model,
            "device": f"nvidia{gpu}",
            "namespace": ns,
            "pod": f"{ns}-0",
            "container": "main",
        }
        for field_name, kind, _ in dcgm_counters.COUNTERS:
            if kind == "label" or field_name in DCGM_EVENT_COUNTS:
                continue
            value = GAUGE_VALUES.get(field_name, 1.0)
            if field_name == "DCGM_FI_DEV_GPU_TEMP" and gpu == 0:
                value = m.gpu_temp_limit_celsius + 2  # one hot GPU per node
            if kind == "counter":
                c.add(field_name, labels, base=1000.0, slope=1e9 if "VIOLATION" in field_name else 3.0)
            else:
                c.add(field_name, labels, base=value)
        for metric, (label, label_value) in DCGM_EVENT_COUNTS.items():
            c.add(metric, {**labels, label: label_value, "window_size_in_ms": "300000"}, base=1.0)


def node_series(c: Cluster, pool: Pool) -> None:
    m, node = c.env.monitoring, c.node_name(pool)
    for device in ("mlx5_0", "mlx5_1"):
        labels = {**c.job("node"), m.node_exporter_host_label: node, "device": device, "port": "1"}
        for counter in IB_COUNTERS:
            c.add(f"node_infiniband_{counter}", labels, base=1e6, slope=1e4)
        for gauge, value in IB_GAUGES.items():
            c.add(f"node_infiniband_{gauge}", labels, base=value)
    c.add(
        "node_mountstats_nfs_write_bytes_total",
        {
            **c.job("node"),
            "instance": node,
            "export": "nfs:/ckpt",
            "protocol": "tcp",
            "mountaddr": "10.0.0.9",
        },
        base=1e12,
        slope=6e10,
    )


def ksm_node(c: Cluster, node: str, labels: dict[str, str], resource: str, gpus: int) -> None:
    base = {**c.job("ksm"), "node": node}
    c.add("kube_node_labels", {**base, **{f"label_{ksm_sanitize(k)}": v for k, v in labels.items()}}, base=1)
    for metric in ("kube_node_status_capacity", "kube_node_status_allocatable"):
        c.add(metric, {**base, "resource": ksm_sanitize(resource), "unit": "integer"}, base=gpus)
    c.add("kube_node_spec_unschedulable", base)
    c.add("kube_node_status_condition", {**base, "condition": "Ready", "status": "true"}, base=1)


def ksm_pod(c: Cluster, ns: str, pod: str, node: str, priority_class: str, resource: str, gpus: int) -> None:
    base = {**c.job("ksm"), "namespace": ns, "pod": pod}
    c.add("kube_pod_info", {**base, "node": node, "priority_class": priority_class}, base=1)
    c.add("kube_pod_status_phase", {**base, "phase": "Running"}, base=1)
    c.add("kube_pod_status_phase", {**base, "phase": "Pending"})
    c.add("kube_pod_container_status_restarts_total", {**base, "container": "main"}, slope=0.1)
    c.add(
        "kube_pod_container_resource_requests",
        {**base, "container": "main", "node": node, "resource": ksm_sanitize(resource), "unit": "integer"},
        base=gpus,
    )


def kueue_series(c: Cluster) -> None:
    job = c.job("kueue")
    for team in c.env.teams:
        cq = {**job, "cluster_queue": team.name}
        c.add("kueue_pending_workloads", {**cq, "status": "active"}, base=3)
        c.add("kueue_pending_workloads", {**cq, "status": "inadmissible"}, base=1)
        c.add("kueue_admitted_active_workloads", cq, base=2)
        for i, le in enumerate(WAIT_BUCKETS):
            c.add("kueue_admission_wait_time_seconds_bucket", {**cq, "le": le}, slope=1 + i)
        c.add("kueue_evicted_workloads_total", {**cq, "reason": "PodsReadyTimeout"}, slope=0.05)
        c.add("kueue_evicted_workloads_total", {**cq, "reason": "Preempted"}, slope=0.1)
        c.add(
            "kueue_preempted_workloads_total",
            {**job, "preempting_cluster_queue": team.name, "reason": "InClusterQueue"},
            slope=0.1,
        )
        for flavor in c.env.team_flavors[team.name]:
            gpu = c.env.pool(flavor.pool).gpu_resource
            for quota in flavor.quotas:
                if quota.resource.name != gpu:
                    continue
                labels = {**cq, "cohort": team.cohort or "", "flavor": flavor.pool, "resource": gpu}
                c.add("kueue_cluster_queue_nominal_quota", labels, base=float(quota.nominal))
                c.add("kueue_cluster_queue_resource_usage", labels, base=float(quota.nominal) / 2)


def overflow_series(c: Cluster) -> None:
    ov = c.env.overflow
    if ov is None:
        return
    gate = {"job": "overflow-gate", "namespace": ov.namespace}
    c.add("trainyard_gate_free_gpus", gate, base=40)
    # The gate's health series (gate/trainyard_gate/overflow/metrics.py): leading, querying fine, each
    # gate matching its virtual node, no errors.
    c.add("trainyard_gate_leader", gate, base=1)
    c.add("trainyard_gate_query_success", gate, base=1)
    c.add("trainyard_gate_last_successful_query_timestamp_seconds", gate, base=START, slope=STEP)
    for stage in ("query", "nodes", "pass", "election"):
        c.add("trainyard_gate_errors_total", {**gate, "stage": stage})
    inference = next(t.name for t in c.env.tiers if t.role == "inference")
    for rank, provider in enumerate(ov.providers):
        c.add("trainyard_gate_closed", {**gate, "gate": provider.name}, base=float(rank > 0))
        c.add("trainyard_gate_matched_nodes", {**gate, "gate": provider.name}, base=1)
        for direction in ("open", "close"):
            c.add(
                "trainyard_gate_transitions_total",
                {**gate, "gate": provider.name, "direction": direction},
                slope=0.05,
            )
        ksm_node(c, provider.node_name, provider.node_labels, provider.gpu_resource, provider.gpus)
        ksm_pod(
            c,
            ov.inference_namespaces[0],
            f"spill-{provider.name}",
            provider.node_name,
            inference,
            provider.gpu_resource,
            1,
        )


def health_series(c: Cluster) -> None:
    """The health controller's metrics (docs/health.md, backend trainyard): leading, querying
    fine, one node of the first watched pool quarantined for a hot GPU, no errors."""
    health = c.env.health
    if health is None or health.controller is None:
        return
    ctl = health.controller
    job = {"job": "gpu-health", "namespace": ctl.namespace}
    first = ctl.pools[0]
    node = {**job, "node": c.node_name(first), "pool": first.name, "reason": "gpu-temperature"}
    c.add("trainyard_health_quarantined", node, base=1)
    c.add("trainyard_health_quarantined_since_seconds", node, base=START)
    for pool in ctl.pools:
        c.add("trainyard_health_held_back", {**job, "pool": pool.name})
        c.add("trainyard_health_cap", {**job, "pool": pool.name}, base=float(ctl.cap.pool_cap(pool)))
        c.add("trainyard_health_pool_nodes", {**job, "pool": pool.name}, base=float(pool.nodes))
    c.add("trainyard_health_cap_fleet", job, base=float(ctl.cap.max_nodes))
    for cond in ctl.active_conditions:
        bad = float(cond.reason == "gpu-temperature")
        c.add("trainyard_health_bad_nodes", {**job, "reason": cond.reason}, base=bad)
    c.add("trainyard_health_query_success", job, base=1)
    c.add("trainyard_health_last_success_timestamp_seconds", job, base=START, slope=STEP)
    c.add("trainyard_health_leader", {**job, "pod": "gpu-health-0"}, base=1)
    for action in ("quarantine", "release", "rewrite"):
        c.add("trainyard_health_node_patches_total", {**job, "action": action}, slope=0.01)
    for stage in ("query", "nodes", "pass", "election"):
        c.add("trainyard_health_errors_total", {**job, "stage": stage})
    c.add("up", {**job, "instance": f"{c.env.name}-gpu-health:9102"}, base=1)


def cluster(env: Environment) -> Cluster:
    c = Cluster(env)
    for pool in env.pools:
        node = c.node_name(pool)
        gpu_series(c, pool)
        node_series(c, pool)
        ksm_node(c, node, dict(pool.node_labels), pool.gpu_resource, pool.gpus_per_node)
        tier = next(t.name for t in env.tiers if (t.role == "inference") == (pool.role == "inference"))
        ksm_pod(
            c,
            c.namespace_of(pool),
            f"{c.namespace_of(pool)}-0",
            node,
            tier,
            pool.gpu_resource,
            pool.gpus_per_node,
        )
    kueue_series(c)
    overflow_series(c)
    health_series(c)
    for which in ("dcgm", "node", "ksm", "kueue"):
        c.add("up", {**c.job(which), "instance": f"{env.name}-{which}:9100"}, base=1)
    return c


def openmetrics(envs: list[Environment]) -> str:
    """All environments' series, grouped by metric family (OpenMetrics requires it)."""
    families: dict[str, list[Series]] = {}
    for env in envs:
        for s in cluster(env).series:
            families.setdefault(s.name, []).append(s)
    lines = [line for name in sorted(families) for s in families[name] for line in s.lines()]
    return "\n".join(lines) + "\n# EOF\n"
