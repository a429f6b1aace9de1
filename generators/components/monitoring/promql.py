"""The environment-wide joins only dashboards and alert rules read (expected GPUs per node,
quota per flavor, the overflow providers and gate), over the one PromQL vocabulary.

Every expression here is built from the model (monitoring selectors, pool node labels,
GPUs per node), so a dashboard panel and the alert that watches the same thing cannot
disagree about what they measure. The selectors, node and pod sets, predicates and string
helpers live in generators/model/promql.py: the model derives the overflow gate's query and
the quarantine conditions from them, and the model must not import the components.
"""

from __future__ import annotations

from collections.abc import Callable

from generators.model.environment import Environment
from generators.model.health import NAME as HEALTH_NAME
from generators.model.health import Controller
from generators.model.monitoring import Monitoring
from generators.model.overflow import GATE, Overflow, Provider
from generators.model.promql import Inventory
from generators.promql.vocabulary import (
    ksm_label,
    ksm_resource,
    labelled_union,
    match_any,
    num,
    quote,
    regex_any,
    selector,
    with_label,
)

__all__ = [
    "GATE_JOB",
    "Queries",
    "ksm_label",
    "ksm_resource",
    "labelled_union",
    "match_any",
    "num",
    "quote",
    "regex_any",
    "selector",
    "with_label",
]

GATE_JOB = GATE  # Prometheus' job label is the gate's Service name
BLIND_PASSES = 10  # failed passes (free-GPU or condition queries) in a row before "blind"


class Queries(Inventory):
    """Expressions for one environment."""

    def __init__(self, env: Environment) -> None:
        super().__init__(env.monitoring, env.pools)
        self.env = env
        self.m: Monitoring = env.monitoring

    # --- inventory ---------------------------------------------------------------------
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

    def gpus_seen_per_node(self) -> str:
        """GPUs a node shows: dcgm-exporter's count, else the device plugin's capacity."""
        dcgm = self.gpu_node(f"count by ({self.m.host_label}) ({self.dcgm('DCGM_FI_DEV_GPU_TEMP')})")
        capacity = self.ksm("kube_node_status_capacity", self.gpu_resources_ksm())
        return f"({dcgm} or max by (node) ({capacity}))"

    def nodes_missing_gpus(self) -> str:
        """Nodes showing fewer GPUs than their pool promises (labels node, pool, expected)."""
        expected = self.expected_gpus_per_node()
        return f"{self.gpus_seen_per_node()} < on (node) group_left (pool, expected) {expected}"

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

    def gate_matchers(self) -> str:
        """The overflow gate controller's targets (its ServiceMonitor: job = Service name)."""
        return f"job={quote(GATE_JOB)}, namespace={quote(self.overflow.namespace)}"

    def gate(self, metric: str, *extra: str) -> str:
        """A series of the overflow gate controller."""
        return metric + selector(self.gate_matchers(), *extra)

    def virtual_nodes(self) -> str:
        return match_any("node", list(self.overflow.virtual_nodes))

    def virtual_nodes_ready(self) -> str:
        """Each provider's virtual node's Ready=true condition (1 = Ready), as kube-state-metrics
        reports it: what VirtualNodeNotReady alerts on and the overflow dashboard draws."""
        return self.ksm(
            "kube_node_status_condition", 'condition="Ready"', 'status="true"', self.virtual_nodes()
        )

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

    # --- health quarantine (only with the built-in backend) ------------------------------
    @property
    def quarantine(self) -> Controller:
        if self.env.health is None or self.env.health.controller is None:
            raise ValueError("this environment has no built-in health controller")
        return self.env.health.controller

    def health_controller(self, metric: str, *extra: str) -> str:
        """A series of the health controller, scraped through its ServiceMonitor (job =
        Service name); its alerts and the quarantine dashboard read the same ones."""
        ns = quote(self.quarantine.namespace)
        return metric + selector(f"job={quote(HEALTH_NAME)}", f"namespace={ns}", *extra)

    @property
    def quarantined_nodes(self) -> str:
        """The health controller's series of the nodes it holds in quarantine now (its gauge is
        1 while the taint is on): counted by the reserve alert and the quarantine dashboard."""
        return f"({self.health_controller('trainyard_health_quarantined')} == 1)"

    # --- what both controllers' own alerts share (one program, two policies) --------------
    def blind_after_seconds(self, reconcile_interval_seconds: int) -> int:
        """No successful pass for this long is blind: BLIND_PASSES reconcile intervals, at
        least monitoring.alerts.controllerBlindMinSeconds."""
        return max(self.m.alerts.controller_blind_min_seconds, BLIND_PASSES * reconcile_interval_seconds)

    @staticmethod
    def no_leader(leader: str) -> str:
        """No process of the controller holds its Lease."""
        return f"sum({leader}) < 1"

    def failing(self, errors_total: str) -> str:
        """Failures per stage within monitoring.alerts.controllerErrorWindow."""
        window = self.m.alerts.controller_error_window
        return f"sum by (stage) (increase({errors_total}[{window}])) > 0"
