"""Overflow spec pieces a test needs only to be valid, shared by tests/overflow (its BASE)
and the oracle of tests/oracles/test_tiers_and_overflow.py: a mock provider entry, the
inference pool the default free-GPU query counts, and one served Deployment. What a test
is about (a provider's name, GPU model, price and preference; the gate band; the tiers)
stays written in the test; the fields that only make an entry valid live here once, so a
schema change to them is one edit, not one per folder.

And a small valid environment with an overflow section (BASE: the minimal corpus spec plus
the inference pool the default free-GPU query counts), with a second provider to add
(tests/overflow and the overflow model's tests/model/test_overflow.py)."""

from __future__ import annotations

from tests.support import CORPUS


def mock_provider(name: str, model: str, cost: float, preference: int | None = None) -> str:
    """One `overflow.providers` entry of type mock (8 GPUs of `model` at `cost` USD per GPU
    hour; `preference` omitted: the schema default)."""
    entry = f"""\
    - name: {name}
      type: mock
      image: {{repository: ghcr.io/example/vk, tag: v1.13.0}}
      credentialsSecret: {{name: {name}, key: token}}
      config: {{cpu: "8", memory: 64Gi, pods: "110"}}
      gpus: 8
      gpuModel: {model}
      costPerGpuHourUsd: {cost}
"""
    return entry if preference is None else entry + f"      preference: {preference}\n"


# A `pools` entry: two 8 x L4 nodes inference may use (the default free-GPU query counts them).
INFERENCE_POOL = """\
  - name: serve
    role: inference
    gpu: {model: L4, perNode: 8}
    nodes: 2
    cpu: 96
    memory: 1000Gi
    nodeLabels: {pool: serve}
"""
# An `overflow.inference` entry: Deployment web/api at tier serve, scaled on its queue depth.
SERVED_API = """\
    - namespace: web
      deployment: api
      tier: serve
      podSelector: {app: api}
      minReplicas: 1
      maxReplicas: 4
      metric: {name: queue_depth, averageValue: "5"}
"""

OVERFLOW = (
    "overflow:\n  providers:\n"
    + mock_provider("cheap", "L4", 0.8)
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
"""
    + SERVED_API
)
SECOND_PROVIDER = mock_provider("dear", "H100", 3.5)  # differs in name, GPU model and price only
MINIMAL = (CORPUS / "valid-minimal.yaml").read_text()
BASE = (
    MINIMAL.replace("teams:\n", INFERENCE_POOL + "teams:\n", 1).replace(
        "shares: {train: 100}", "shares: {train: 100, serve: 100}"
    )
    + OVERFLOW
)
