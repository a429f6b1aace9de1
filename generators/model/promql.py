"""The PromQL an environment's model decides: its exporters' series and the predicates over
them. The words every query is written with (selectors, matchers, label names) are the leaf
generators/promql/vocabulary.py.

The model derives two kinds of query itself (the overflow gate's free-GPU query, overflow.py;
the health quarantine conditions, health.py), and the dashboards and alert rules
(generators/components/monitoring/, whose Queries adds the environment-wide joins) show and
watch the same things. So the selectors, node sets and predicates they share live here, on
the model side: the components import the model, never the other way round, and "a node of
pool p", "a live pod", "a GPU above the limit, ignoring DCGM placeholders" or "a counter's
increase unless it reads a DCGM blank" has one definition. A caller only chooses how to
aggregate (per GPU for an alert, per node for a quarantine condition, a count for a panel).

kube-state-metrics series and labels used (its docs/metrics/cluster/node-metrics.md and
docs/metrics/workload/pod-metrics.md): kube_node_labels{node, label_*} (only allowlisted
labels), kube_node_status_allocatable{node, resource, unit},
kube_node_status_condition{node, condition, status}, kube_node_spec_unschedulable{node},
kube_node_spec_taint{node, key, value, effect} (one series per taint; none for an untainted
node), kube_pod_container_resource_requests{namespace, pod, container, node, resource},
kube_pod_status_phase{namespace, pod, phase}. dcgm-exporter and node_exporter series, and
what their values mean, are tabled in generators/model/exporters.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from generators.model import exporters
from generators.model.monitoring import Monitoring
from generators.model.types import Pool
from generators.promql.vocabulary import (
    ksm_label,
    ksm_resource,
    labelled_union,
    match_any,
    quote,
    selector,
    to_node,
)


def below_blank(expr: str) -> str:
    """`expr` where it reads below DCGM's "no value" sentinels (exporters.DCGM_BLANK_MIN)."""
    return f"{expr} < {exporters.DCGM_BLANK_MIN}"


def unless_blank(series: str, expr: str) -> str:
    """`expr` (computed from `series`), ignoring GPUs whose `series` reads a DCGM blank now:
    a counter that jumps to one would look like billions of errors."""
    return f"({expr} and ({below_blank(series)}))"


def share_of_time(violation_ns: str, window: str) -> str:
    """The share of time a DCGM violation counter (nanoseconds throttled) counted over `window`."""
    return f"rate({violation_ns}[{window}]) / 1e9"


Per = Callable[[str], str]  # how a caller aggregates a predicate's readings


class ExporterQueries:
    """Series of the exporters one environment scrapes (its monitoring selectors), and the
    predicates over them that alerts, dashboards and quarantine conditions share.

    A predicate takes `per`, the aggregation of its readings before the threshold: per GPU
    (host, gpu, UUID) in an alert, per node (`gpu_node`, `port_node`) in a quarantine
    condition, none in a panel that counts. The threshold and what is ignored stay here."""

    def __init__(self, monitoring: Monitoring) -> None:
        self.m = monitoring

    # --- selectors -------------------------------------------------------------------
    def ksm(self, metric: str, *extra: str) -> str:
        return metric + selector(self.m.selectors.kube_state_metrics, *extra)

    def dcgm(self, metric: str, *extra: str) -> str:
        return metric + selector(self.m.selectors.dcgm, *extra)

    def held_by_pod(self) -> str:
        """Matchers keeping only the GPUs a pod holds (dcgm-exporter series).

        dcgm-exporter writes `namespace`, `pod` and `container` only on a GPU the kubelet's
        pod-resources API assigns to a container (internal/pkg/transformation/kubernetes.go,
        Process: :265-274 at 4.4.1-4.5.2, :426-436 at 4.5.3-4.8.2); an idle GPU has none. With
        `honorLabels: true` (the operator's ServiceMonitor, rendered gpu-operator values)
        Prometheus then gives the idle GPU the target's own labels, which prometheus-operator
        always writes: `namespace` = the Service's namespace, `pod` the exporter pod. So
        `namespace!=""` keeps idle GPUs; the exporter's namespace tells them apart (the
        operator creates the Service and ServiceMonitor in it). `pod_uid`, which only a held
        GPU carries, would be exact, but it is empty unless --kubernetes-enable-pod-uid is on
        (createPodInfo, :747-779 at 4.4.1-4.5.2), and the operator does not set it."""
        return f'namespace!="", namespace!={quote(self.m.dcgm_namespace)}'

    def node(self, metric: str, *extra: str) -> str:
        return metric + selector(self.m.selectors.node_exporter, *extra)

    def kueue(self, metric: str, *extra: str) -> str:
        return metric + selector(self.m.selectors.kueue, *extra)

    def ib(self, metric: str, *extra: str) -> str:
        """A node-exporter InfiniBand series, restricted to the watched devices."""
        return self.node(metric, f"device=~{quote(self.m.infiniband_devices)}", *extra)

    def gpu_node(self, expr: str) -> str:
        """A dcgm-exporter expression per node."""
        return to_node(expr, self.m.host_label)

    def port_node(self, expr: str) -> str:
        """A node-exporter expression per node."""
        return to_node(expr, self.m.node_exporter_host_label)

    # --- counters --------------------------------------------------------------------
    def increase_unless_blank(self, series: str, window: str = "") -> str:
        """Increase over `window` (default monitoring.alerts.errorWindow), ignoring counters
        that read a DCGM blank."""
        return unless_blank(series, f"increase({series}[{window or self.m.alerts.error_window}])")

    def increases_unless_blank(self, series: Mapping[str, str], window: str) -> str:
        """counter_increases of DCGM counters, each ignoring GPUs whose counter reads a blank
        (what the NVLink alert counts, over a dashboard's window)."""
        return labelled_union(
            "counter", {n: self.increase_unless_blank(s, window) for n, s in series.items()}
        )

    @staticmethod
    def counter_increases(series: Mapping[str, str], window: str) -> str:
        """Increases of a counter family over `window`, one series set told apart by
        `counter` = the family member (LINK_ERROR_COUNTERS, NVLINK_COUNTERS)."""
        return labelled_union("counter", {name: f"increase({s}[{window}])" for name, s in series.items()})

    def nvlink_counters(self, *extra: str) -> dict[str, str]:
        return {name: self.dcgm(metric, *extra) for name, metric in exporters.NVLINK_COUNTERS.items()}

    def ib_error_counters(self, *extra: str) -> dict[str, str]:
        return {name: self.ib(metric, *extra) for name, metric in exporters.LINK_ERROR_COUNTERS.items()}

    # --- predicates: what "bad" means, with its threshold ------------------------------
    def temp_plausible(self, metric: str, *extra: str) -> str:
        """Temperature readings without DCGM placeholders."""
        return f"({self.dcgm(metric, *extra)} < {self.m.gpu_temp_plausible_max_celsius})"

    def gpu_too_hot(self, per: Per, *extra: str) -> str:
        """GPUs above monitoring.gpuTempLimitCelsius, ignoring DCGM placeholders."""
        return f"{per(self.temp_plausible('DCGM_FI_DEV_GPU_TEMP', *extra))} > {self.m.gpu_temp_limit_celsius}"

    def xid_requires_replacement(self, per: Per) -> str:
        """GPUs that reported an XID of monitoring.xidReplaceCodes within the error window."""
        codes = "|".join(str(c) for c in self.m.xid_replace_codes)
        series = self.dcgm("DCGM_EXP_XID_ERRORS_COUNT", f"xid=~{quote(codes)}")
        return f"{per(f'max_over_time({series}[{self.m.alerts.error_window}])')} > 0"

    def nvlink_errors(self, per: Per) -> str:
        """GPUs whose NVLink error counters (each apart, blanks ignored) rose by more than
        monitoring.alerts.nvlinkErrorsPerWindow within the error window."""
        increases = {name: self.increase_unless_blank(s) for name, s in self.nvlink_counters().items()}
        per_gpu = f"sum by ({self.m.host_label}, gpu, UUID, counter) ({labelled_union('counter', increases)})"
        return f"{per(per_gpu)} > {self.m.alerts.nvlink_errors_per_window}"

    def port_state_not_active(self, *extra: str) -> str:
        return f"{self.ib('node_infiniband_state_id', *extra)} != {exporters.ACTIVE_STATE}"

    def ports_not_active(self, per: Per, *extra: str) -> str:
        """Watched InfiniBand ports not ACTIVE or without their physical link up."""
        physical = self.ib("node_infiniband_physical_state_id", *extra)
        not_up = f"{physical} != {exporters.LINK_UP_PHYSICAL_STATE}"
        return per(f"({self.port_state_not_active(*extra)} or {not_up})")

    def ib_link_errors(self, per: Per) -> str:
        """Ports whose link error counters (each apart) rose by more than
        monitoring.alerts.infinibandErrorsPerWindow within the error window."""
        h = self.m.node_exporter_host_label
        increases = self.counter_increases(self.ib_error_counters(), self.m.alerts.error_window)
        per_port = f"sum by ({h}, device, port, counter) ({increases})"
        return f"{per(per_port)} > {self.m.alerts.infiniband_errors_per_window}"


class Inventory(ExporterQueries):
    """Node and pod sets from kube-state-metrics, for one environment's pools."""

    def __init__(self, monitoring: Monitoring, pools: tuple[Pool, ...]) -> None:
        super().__init__(monitoring)
        self.pools = pools

    def ksm_up(self) -> str:
        """1 while every kube-state-metrics target is scraped; no sample when any target is
        down (up == 0) or none is known (no `up` series, or only stale ones). `min`, not
        `max`: with sharded kube-state-metrics a missing shard means missing nodes or pods."""
        return f"(min({self.ksm('up')}) == 1)"

    def ksm_present(self, *metrics: str) -> str:
        """1 when every one of the kube-state-metrics families has at least one series, no
        sample otherwise (a collector turned off, a family on the denylist)."""
        return "(" + " and on () ".join(f"group({self.ksm(m)})" for m in metrics) + ")"

    def pool_nodes(self, pool: Pool) -> str:
        """kube_node_labels of the pool's nodes (every nodeLabel must be on the KSM allowlist)."""
        labels = [f"{ksm_label(k)}={quote(v)}" for k, v in pool.node_labels.items()]
        return f"max by (node) ({self.ksm('kube_node_labels', *labels)})"

    def nodes_of_pools(self, pools: tuple[Pool, ...]) -> str:
        """Nodes of any of `pools` (value 1, label node)."""
        return "(" + " or ".join(self.pool_nodes(p) for p in pools) + ")"

    def gpu_resources_ksm(self, pools: tuple[Pool, ...] | None = None) -> str:
        return match_any("resource", [ksm_resource(p.gpu_resource) for p in pools or self.pools])

    def usable_nodes(self) -> str:
        """Nodes that can take pods: Ready and not cordoned."""
        ready = self.ksm("kube_node_status_condition", 'condition="Ready"', 'status="true"')
        return (
            f"(max by (node) ({self.ksm('kube_node_spec_unschedulable')}) == 0) "
            f"and on (node) (max by (node) ({ready}) == 1)"
        )

    def tainted_nodes(self, tolerated_keys: tuple[str, ...]) -> str:
        """Nodes carrying a NoSchedule or NoExecute taint whose key is not in
        `tolerated_keys` (PreferNoSchedule only steers the scheduler, it does not block)."""
        matchers = ['effect=~"NoSchedule|NoExecute"']
        # One key!= per key rather than one key!~ alternation: the same set, and it wraps
        # (generate.py plan prints the query within 100 columns).
        matchers += [f"key!={quote(key)}" for key in sorted(set(tolerated_keys))]
        return f"max by (node) ({self.ksm('kube_node_spec_taint', *matchers)})"

    def active_pods(self) -> str:
        """Per pod: 1 while it is Pending or Running (finished pods hold no GPUs)."""
        phase = self.ksm("kube_pod_status_phase", 'phase=~"Pending|Running"')
        return f"(max by (namespace, pod) ({phase}) == 1)"
