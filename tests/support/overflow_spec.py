"""Overflow spec pieces a test needs only to be valid, shared by tests/overflow (its BASE)
and the oracle of tests/oracles/test_tiers_and_overflow.py: a mock provider entry, the
inference pool the default free-GPU query counts, and one served Deployment. What a test
is about (a provider's name, GPU model, price and preference; the gate band; the tiers)
stays written in the test; the fields that only make an entry valid live here once, so a
schema change to them is one edit, not one per folder."""

from __future__ import annotations


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
