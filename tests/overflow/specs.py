"""A small valid environment with an overflow section (BASE), and a second provider to add.

BASE is the minimal corpus spec plus the inference pool the default free-GPU query counts."""

from __future__ import annotations

from tests.support import CORPUS
from tests.support.overflow_spec import INFERENCE_POOL, SERVED_API, mock_provider

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
