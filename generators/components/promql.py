"""PromQL shared by dashboards and alert rules: selectors, and joins against the inventory.

Every expression here is built from the model (monitoring selectors, pool node labels,
GPUs per node), so a dashboard panel and the alert that watches the same thing cannot
disagree about what they measure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from generators.components.overflow import GATE
from generators.model.monitoring import Monitoring
from generators.model.overflow import Overflow, Provider
from generators.model.types import Environment, Pool

GATE_JOB = GATE  # Prometheus' job label is the gate's Service name

# DCGM reports "no value" as sentinels from DCGM_INT64_BLANK = 0x7ffffffffffffff0 up (old
# exporters show 9223372036854775794, NOT_SUPPORTED). A counter that jumps to one looks like
# billions of errors; real counters (even nanoseconds of throttling) never get near it.
DCGM_BLANK_MIN = 0x7FFFFFFFFFFFFFF0


def selector(*matchers: str) -> str:
    """`{a, b}` from non-empty matcher strings."""
    return "{" + ", ".join(m for m in matchers if m) + "}"


def quote(value: str) -> str:
    """A PromQL double-quoted string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def regex_any(values: list[str]) -> str:
    """An RE2 alternation matching exactly the given literal values."""
    return "|".join(re.sub(r"([.+*?()\[\]{}|^$\\])", r"\\\1", v) for v in values)


def match_any(label: str, values: list[str]) -> str:
    """`label="v"` for one value, `label=~"v1|v2"` for several."""
    unique = sorted(set(values))
    if len(unique) == 1:
        return f"{label}={quote(unique[0])}"
    return f"{label}=~{quote(regex_any(unique))}"


def ksm_label(key: str) -> str:
    """The label name kube-state-metrics gives a Kubernetes label on kube_node_labels."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


def ksm_resource(resource: str) -> str:
    """kube-state-metrics' resource label value for an extended resource (nvidia.com/gpu ->
    nvidia_com_gpu)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", resource)


def with_label(expr: str, label: str, value: str) -> str:
    """`expr` with label `label` set to the constant `value` (label_replace from no source)."""
    return f'label_replace({expr}, {quote(label)}, {quote(value)}, "", "")'


def labelled_union(label: str, exprs: Mapping[str, str]) -> str:
    """One series set from several expressions, each told apart by `label` = its key
    (the `counter` of an error-counter family, the `provider` of a spend series)."""
    return " or ".join(with_label(expr, label, value) for value, expr in exprs.items())


def num(value: float) -> str:
    """A number as PromQL prints best: 78, 0.05."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class Queries:
    """Expressions for one environment."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.m: Monitoring = env.monitoring

    # --- selectors -------------------------------------------------------------------
    def dcgm(self, metric: str, *extra: str) -> str:
        return metric + selector(self.m.selectors.dcgm, *extra)

    def node(self, metric: str, *extra: str) -> str:
        return metric + selector(self.m.selectors.node_exporter, *extra)

    def ksm(self, metric: str, *extra: str) -> str:
        return metric + selector(self.m.selectors.kube_state_metrics, *extra)

    def kueue(self, metric: str, *extra: str) -> str:
        return metric + selector(self.m.selectors.kueue, *extra)

    def ib(self, metric: str, *extra: str) -> str:
        """A node-exporter InfiniBand series, restricted to the watched devices."""
        return self.node(metric, f"device=~{quote(self.m.infiniband_devices)}", *extra)

    def temp_plausible(self, metric: str, *extra: str) -> str:
        """Temperature readings without DCGM placeholders."""
        return f"({self.dcgm(metric, *extra)} < {self.m.gpu_temp_plausible_max_celsius})"

    # --- inventory ---------------------------------------------------------------------
    def pool_nodes(self, pool: Pool) -> str:
        """kube_node_labels of the pool's nodes (every nodeLabel must be on the KSM allowlist)."""
        labels = [f"{ksm_label(k)}={quote(v)}" for k, v in pool.node_labels.items()]
        return f"max by (node) ({self.ksm('kube_node_labels', *labels)})"

    def expected_gpus_per_node(self) -> str:
        """Per node: the GPUs its pool promises, with labels pool and expected."""
        parts = [
            with_label(
                with_label(f"{self.pool_nodes(p)} * 0 + {p.gpus_per_node}", "pool", p.name),
                "expected",
                str(p.gpus_per_node),
            )
            for p in self.env.pools
        ]
        return "(" + " or ".join(parts) + ")"

    def gpu_resources_ksm(self) -> str:
        return match_any("resource", [ksm_resource(p.gpu_resource) for p in self.env.pools])

    def gpus_seen_per_node(self) -> str:
        """GPUs a node shows: dcgm-exporter's count, else the device plugin's capacity."""
        h = self.m.host_label
        dcgm = (
            f"label_replace(count by ({h}) ({self.dcgm('DCGM_FI_DEV_GPU_TEMP')}), "
            f'"node", "$1", {quote(h)}, "(.*)")'
        )
        capacity = self.ksm("kube_node_status_capacity", self.gpu_resources_ksm())
        return f"(max by (node) ({dcgm}) or max by (node) ({capacity}))"

    def usable_nodes(self) -> str:
        """Nodes that can take pods: Ready and not cordoned."""
        ready = self.ksm("kube_node_status_condition", 'condition="Ready"', 'status="true"')
        return (
            f"(max by (node) ({self.ksm('kube_node_spec_unschedulable')}) == 0) "
            f"and on (node) (max by (node) ({ready}) == 1)"
        )

    def allocatable_gpus_by_flavor(self) -> str:
        """Per Kueue flavor (= pool): allocatable GPUs of its usable nodes."""
        totals = {}
        for p in self.env.pools:
            resource = f"resource={quote(ksm_resource(p.gpu_resource))}"
            alloc = self.ksm("kube_node_status_allocatable", resource)
            totals[p.name] = (
                f"sum(max by (node) ({alloc}) and on (node) {self.pool_nodes(p)} "
                f"and on (node) ({self.usable_nodes()})) or vector(0)"
            )
        return "(" + labelled_union("flavor", totals) + ")"

    def nominal_gpus_by_flavor(self) -> str:
        """Per flavor: nominal GPU quota summed over ClusterQueues (needs Kueue's
        metrics.enableClusterQueueResources, which the kueue component turns on)."""
        resources = match_any("resource", [p.gpu_resource for p in self.env.pools])
        flavors = match_any("flavor", [p.name for p in self.env.pools])
        return f"sum by (flavor) ({self.kueue('kueue_cluster_queue_nominal_quota', resources, flavors)})"

    def inference_priority_classes(self) -> list[str]:
        return [t.name for t in self.env.tiers if t.role == "inference"]

    # --- overflow (only with an `overflow` section) ------------------------------------------
    @property
    def overflow(self) -> Overflow:
        if self.env.overflow is None:
            raise ValueError("this environment has no overflow section")
        return self.env.overflow

    def gate(self, metric: str, *extra: str) -> str:
        """A series of the overflow gate controller, scraped through its ServiceMonitor."""
        ns = quote(self.overflow.namespace)
        return metric + selector(f"job={quote(GATE_JOB)}", f"namespace={ns}", *extra)

    def virtual_nodes(self) -> str:
        return match_any("node", list(self.overflow.virtual_nodes))

    def active_pods(self) -> str:
        """Per pod: 1 while it is Pending or Running (finished pods hold no GPUs)."""
        phase = self.ksm("kube_pod_status_phase", 'phase=~"Pending|Running"')
        return f"(max by (namespace, pod) ({phase}) == 1)"

    def provider_gpus(self, provider: Provider) -> str:
        """GPUs requested by live pods on the provider's virtual node."""
        requests = self.ksm(
            "kube_pod_container_resource_requests",
            f"resource={quote(ksm_resource(provider.gpu_resource))}",
            f"node={quote(provider.node_name)}",
        )
        return f"(sum({requests} * on (namespace, pod) group_left () {self.active_pods()}) or vector(0))"

    def provider_pods(self, provider: Provider) -> str:
        info = self.ksm("kube_pod_info", f"node={quote(provider.node_name)}")
        return f"(count({info} * on (namespace, pod) group_left () {self.active_pods()}) or vector(0))"

    def per_provider(self, expr_of: Callable[[Provider], str]) -> str:
        """One series per provider (label provider), even when the provider is idle."""
        return "(" + labelled_union("provider", {p.name: expr_of(p) for p in self.overflow.providers}) + ")"

    def spend_usd_per_hour(self, provider: Provider) -> str:
        """Estimated spend: GPUs in use times the provider's price (USD per GPU-hour)."""
        return f"({self.provider_gpus(provider)} * {num(provider.cost_per_gpu_hour_usd)})"
