"""The NodeHealthPolicy contract example (../shared/... health contract, copied into
gate/README.md), as text the tests load, edit and feed to the controller."""

from __future__ import annotations

# Conditions in spec order = reason precedence; pools as the generator renders them.
EXAMPLE = """\
apiVersion: trainyard.dev/v1alpha1
kind: NodeHealthPolicy
metadata:
  name: gpu-health
spec:
  prometheus:
    url: "http://prometheus-operated.monitoring.svc:9090"
    timeoutSeconds: 5
  reconcileIntervalSeconds: 30
  onPrometheusUnavailable: hold
  dryRun: false
  taint:
    key: trainyard.dev/gpu-health
    effect: NoSchedule
  annotations:
    reason: trainyard.dev/gpu-health-reason
    since: trainyard.dev/gpu-health-since
  conditions:
  - reason: gpu-temperature
    query: 'max by (node) (DCGM_FI_DEV_GPU_TEMP) > 78'
    quarantineAfterSeconds: 300
  - reason: xid
    query: 'max by (node) (DCGM_FI_DEV_XID_ERRORS) > 0'
    quarantineAfterSeconds: 0
  releaseAfterSeconds: 1800
  pools:
  - name: train-h100-a
    nodeSelector:
      matchLabels: {trainyard.dev/pool: train-h100-a}
  - name: infer-l40s
    nodeSelector:
      matchLabels: {trainyard.dev/pool: infer-l40s}
  cap:
    maxNodes: 4
    maxPercentOfPool: 10
"""
