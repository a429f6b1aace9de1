"""What gpu-operator v26.7.0 makes of a ClusterPolicy, where tests need it and the operator
cannot run here (it needs GPU nodes and their driver state): dcgm-exporter's ServiceMonitor.

Pinned at NVIDIA/gpu-operator v26.7.0 (commit 10ee5b3638b89e11e949412aafa5ba99279c3721):
assets/state-dcgm-exporter/0500_service_monitor.yaml (ServiceMonitor nvidia-dcgm-exporter,
labels {app: nvidia-dcgm-exporter}, jobLabel app), 0400_service.yaml (Service
nvidia-dcgm-exporter labelled app: nvidia-dcgm-exporter, port gpu-metrics 9400),
controllers/object_controls.go:5022 (the operator's namespace) and :4974-5015
applyServiceMonitorCustomEdits (labels += serviceMonitor.additionalLabels at :4980,
honorLabels onto the first endpoint at :5002).
"""

from __future__ import annotations

from generators.k8s.objects import Obj

SERVICE = "nvidia-dcgm-exporter"  # the Service, its app label and the ServiceMonitor's name
PORT = "gpu-metrics"  # the Service's port name


def dcgm_service_monitor(cluster_policy: Obj, operator_namespace: str) -> Obj | None:
    """The ServiceMonitor gpu-operator v26.7.0 makes from a ClusterPolicy (module docstring)."""
    wanted = (cluster_policy["spec"].get("dcgmExporter") or {}).get("serviceMonitor") or {}
    if not wanted.get("enabled"):
        return None
    labels = {"app": SERVICE, **(wanted.get("additionalLabels") or {})}
    endpoint = {"port": PORT, "path": "/metrics"}
    if "honorLabels" in wanted:
        endpoint["honorLabels"] = wanted["honorLabels"]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": SERVICE, "namespace": operator_namespace, "labels": labels},
        "spec": {
            "jobLabel": "app",
            "endpoints": [endpoint],
            "selector": {"matchLabels": {"app": SERVICE}},
        },
    }
