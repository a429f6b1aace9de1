"""Semantic rules of the `monitoring` section that its schema cannot express.

Called from semantics.check; each Problem sits at the offending value of the file.

`stack: kube-prometheus` is refused (issue 20, item 8), with the reason, until trainyard
renders what that stack needs. Read in prometheus-operator/kube-prometheus v0.18.0
(manifests/): its Prometheus `k8s` selects every ServiceMonitor and PrometheusRule
(prometheus-prometheus.yaml: all four selectors `{}`), but its ServiceAccount prometheus-k8s
may list endpoints only in default, kube-system and monitoring
(prometheus-roleSpecificNamespaces.yaml), so the dcgm-exporter (gpu-operator), Kueue, gate
and health targets are never discovered; its NetworkPolicy prometheus-k8s admits port 9090
only from Prometheus, prometheus-adapter and Grafana pods (prometheus-networkPolicy.yaml), so
the gate fails closed and the health controller is blind; and its kube-state-metrics v2.19.0
and node_exporter v1.11.1 (inside generators/model/exporters.py's ranges) take their
arguments (the node-label allowlist, mountstats) as jsonnet, not values. docs/monitoring.md
("Supported monitoring stacks") lists each piece a later change must render.
"""

from __future__ import annotations

from typing import Any

from generators.errors import Problem, format_path
from generators.spec.source import Document

SUPPORTED = ("kube-prometheus-stack",)

_REASONS = {
    "kube-prometheus": (
        "monitoring stack 'kube-prometheus' is not supported yet: its Prometheus may discover "
        "targets only in default, kube-system and monitoring, its NetworkPolicy admits port 9090 "
        "only from its own pods (the gate and the health controller could not query it), and its "
        "kube-state-metrics 2.19.0 and node_exporter 1.11.1 are unchecked releases configured in jsonnet",
        "use stack: kube-prometheus-stack (docs/monitoring.md, 'Supported monitoring stacks', lists "
        "what kube-prometheus would need)",
    ),
}


def check(doc: Document, value: dict[str, Any]) -> list[Problem]:
    stack = value["monitoring"]["stack"]
    if stack in SUPPORTED:
        return []
    message, hint = _REASONS[stack]
    path = ("monitoring", "stack")
    return [Problem(doc.locate(path), message, format_path(path), hint)]
