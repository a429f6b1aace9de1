"""The PromQL vocabulary's words: selectors, literals, matchers, label names of
kube-state-metrics, per-node joins. Every query the project renders is written with them.

A leaf: it imports nothing of the renderer, so the model (the overflow gate's free-GPU
query, the health quarantine conditions: generators/model/promql.py), the dashboards and
alert rules (generators/components/monitoring/) and the gate's policy (policies/) write "a
label of a node", "any of these values" or "per node" one way. What depends on an
environment (its monitoring selectors, its pools, DCGM's blank readings) stays in
generators/model/promql.py. tests/test_import_graph.py holds this package in the leaf layer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping


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


def to_node(expr: str, host_label: str) -> str:
    """`expr` per node: its host label copied into `node` (the Kubernetes node name, which
    dcgm-exporter and node_exporter write in their host labels), one series per node."""
    return f'max by (node) (label_replace({expr}, "node", "$1", {quote(host_label)}, "(.*)"))'


def target_down(up: str) -> str:
    """The targets of `up` failing their scrapes, or gone from service discovery."""
    return f"({up} == 0) or absent({up})"
