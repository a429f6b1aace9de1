"""Argo CD sync waves by kind: the apply order Kueue and Kubernetes need.

Namespaces and priorities first; then flavors, topologies and cohorts (a ClusterQueue
naming a missing flavor goes inactive); then ClusterQueues; then LocalQueues (they name a
ClusterQueue); then configuration and RBAC; then workloads and monitoring. Argo CD waits
for each wave to be healthy before the next, and prunes in reverse.
"""

from __future__ import annotations

WAVES: dict[str, int] = {
    "Namespace": 0,
    "PriorityClass": 0,
    "WorkloadPriorityClass": 0,
    "ResourceFlavor": 1,
    "Topology": 1,
    "Cohort": 1,
    "ClusterQueue": 2,
    "LocalQueue": 3,
    "ServiceAccount": 4,
    "ClusterRole": 4,
    "ClusterRoleBinding": 4,
    "Role": 4,
    "RoleBinding": 4,
    "ConfigMap": 4,
    "Secret": 4,
    "Service": 4,
    "Deployment": 5,
    "DaemonSet": 5,
    "HorizontalPodAutoscaler": 5,
    "PodDisruptionBudget": 5,
    "MutatingAdmissionPolicy": 3,  # labels virtual nodes: must exist before virtual-kubelets start
    "MutatingAdmissionPolicyBinding": 4,
    "ValidatingAdmissionPolicy": 4,
    "ValidatingAdmissionPolicyBinding": 5,
    "PrometheusRule": 5,
    "ServiceMonitor": 5,
    "PodMonitor": 5,
    "GrafanaDashboard": 5,
    "GrafanaFolder": 4,
    "AppProject": 0,
    "Application": 1,
}
DEFAULT_WAVE = 4


def wave(kind: str) -> int:
    return WAVES.get(kind, DEFAULT_WAVE)
