"""PromQL building blocks over kube-state-metrics and the pool inventory.

The model derives one query itself (the overflow gate's free-GPU query, overflow.py), and
the dashboards and alert rules (generators/components/monitoring/promql.py, which builds on this
module) show and watch the same things. So the selectors and node sets they share live
here, on the model side: the components import the model, never the other way round, and
"a node of pool p", "a usable node" or "a live pod" has one definition.

kube-state-metrics series and labels used (its docs/metrics/cluster/node-metrics.md and
docs/metrics/workload/pod-metrics.md): kube_node_labels{node, label_*} (only allowlisted
labels), kube_node_status_allocatable{node, resource, unit},
kube_node_status_condition{node, condition, status}, kube_node_spec_unschedulable{node},
kube_node_spec_taint{node, key, value, effect} (one series per taint; none for an untainted
node), kube_pod_container_resource_requests{namespace, pod, container, node, resource},
kube_pod_status_phase{namespace, pod, phase}.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from generators.model.monitoring import Monitoring
from generators.model.types import Pool


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


def match_none(label: str, values: list[str]) -> str:
    """`label!="v"` for one value, `label!~"v1|v2"` for several."""
    unique = sorted(set(values))
    if len(unique) == 1:
        return f"{label}!={quote(unique[0])}"
    return f"{label}!~{quote(regex_any(unique))}"


def ksm_label(key: str) -> str:
    """The label name kube-state-metrics gives a Kubernetes label on kube_node_labels:
    labelName in internal/store/utils.go (v2.0.0 to v2.20.0, generators/model/exporters.py)
    sanitises, then snake-cases (instanceType -> instance_type) and lower-cases."""
    sanitised = re.sub(r"[^a-zA-Z0-9_]", "_", key)
    return "label_" + re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", sanitised).lower()


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


class Inventory:
    """Node and pod sets from kube-state-metrics, for one environment's pools."""

    def __init__(self, monitoring: Monitoring, pools: tuple[Pool, ...]) -> None:
        self.m = monitoring
        self.pools = pools

    def ksm(self, metric: str, *extra: str) -> str:
        return metric + selector(self.m.selectors.kube_state_metrics, *extra)

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
