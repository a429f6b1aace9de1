"""Argo CD sync waves by kind: the apply order Kueue and Kubernetes need.

Namespaces and priorities first; then flavors, topologies and cohorts (a ClusterQueue
naming a missing flavor goes inactive); then ClusterQueues; then LocalQueues (they name a
ClusterQueue); then configuration and RBAC; then workloads and monitoring; then the
prometheus-adapter's APIService; last what Argo CD must not wait on (generators/gitops/health.py).
Argo CD waits for each wave to be healthy before the next, never for the last one, and prunes
in reverse.
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
    "NetworkPolicy": 4,  # before the pods it admits traffic to
    "Deployment": 5,
    "DaemonSet": 5,
    "PodDisruptionBudget": 5,
    "MutatingAdmissionPolicy": 3,  # labels virtual nodes: must exist before virtual-kubelets start
    "MutatingAdmissionPolicyBinding": 4,
    "ValidatingAdmissionPolicy": 4,
    "ValidatingAdmissionPolicyBinding": 5,
    "PrometheusRule": 5,
    "ServiceMonitor": 5,
    "PodMonitor": 5,
    # After the adapter's Deployment (5) is healthy: an APIService with no backend makes
    # discovery of its group fail for every client until it answers.
    "APIService": 6,
    # Last, a wave Argo CD never waits on: kinds whose health comes from outside the
    # Application (generators/gitops/health.py). An HPA on an External metric also comes
    # after the APIService serving it, so its first read of the metric can succeed.
    "HorizontalPodAutoscaler": 7,
    "GrafanaFolder": 7,
    "GrafanaDashboard": 7,
    "AppProject": 0,
    "Application": 1,
}


def wave(kind: str) -> int:
    """The kind's wave. A kind without one is a generator bug, not a default: the apply
    order is a decision (tests/gitops/test_sync_waves.py renders every shipped environment)."""
    try:
        return WAVES[kind]
    except KeyError:
        raise ValueError(
            f"kind {kind} has no Argo CD sync wave: add it to generators/gitops/syncwaves.py "
            "(docs/components.md, 'Adding a component')"
        ) from None
