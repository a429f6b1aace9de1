"""Moved to generators/box/kueue.py (the cluster in a box uses it too); this module keeps
the old import path for the tests that use it."""

from __future__ import annotations

from generators.box.kueue import (
    KUEUE_READY_SECONDS,
    METRICS_CERT_DIR,
    out_of_cluster,
    rendered_configuration,
    start_kueue,
)

__all__ = [
    "KUEUE_READY_SECONDS",
    "METRICS_CERT_DIR",
    "out_of_cluster",
    "rendered_configuration",
    "start_kueue",
]
