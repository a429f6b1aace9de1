"""A small valid environment with an overflow section (BASE), and a second provider to add."""

from __future__ import annotations

from tests.support import CORPUS

# One mock provider; the two below differ in name, GPU model and price only.
PROVIDER = """\
    - name: {name}
      type: mock
      image: {{repository: ghcr.io/example/vk, tag: v1.13.0}}
      credentialsSecret: {{name: {name}, key: token}}
      config: {{cpu: "8", memory: 64Gi, pods: "110"}}
      gpus: 8
      gpuModel: {model}
      costPerGpuHourUsd: {cost}
"""
OVERFLOW = (
    "overflow:\n  providers:\n"
    + PROVIDER.format(name="cheap", model="L4", cost=0.8)
    + """\
  gate:
    prometheusUrl: http://prometheus:9090
    closeWhenFreeGpusAtLeast: 16
    openWhenFreeGpusBelow: 4
    image: {repository: ghcr.io/example/gate, tag: 0.1.0}
  migrateBack:
    maxPodsToEvictPerNode: 2
    maxPodsToEvictPerNamespace: 2
    maxPodsToEvictTotal: 4
  extraNamespaces: [web]  # alpha trains: its pods run at a training tier, serving lives apart
  inference:
    - namespace: web
      deployment: api
      tier: serve
      podSelector: {app: api}
      minReplicas: 1
      maxReplicas: 4
      metric: {name: queue_depth, averageValue: "5"}
"""
)
SECOND_PROVIDER = PROVIDER.format(name="dear", model="H100", cost=3.5)
# The default free-GPU query counts only pools inference can use: give it one.
INFERENCE_POOL = """\
  - name: serve
    role: inference
    gpu: {model: L4, perNode: 8}
    nodes: 2
    cpu: 96
    memory: 1000Gi
    nodeLabels: {pool: serve}
"""
MINIMAL = (CORPUS / "valid-minimal.yaml").read_text()
BASE = (
    MINIMAL.replace("teams:\n", INFERENCE_POOL + "teams:\n", 1).replace(
        "shares: {train: 100}", "shares: {train: 100, serve: 100}"
    )
    + OVERFLOW
)
