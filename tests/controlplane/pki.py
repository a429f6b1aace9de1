"""Moved to generators/box/pki.py (the cluster in a box uses it too); this module keeps
the old import path for the tests that use it."""

from __future__ import annotations

from generators.box.pki import (
    SERVING_DNS,
    SERVING_IPS,
    VALIDITY,
    Pki,
    generate,
)

__all__ = [
    "SERVING_DNS",
    "SERVING_IPS",
    "VALIDITY",
    "Pki",
    "generate",
]
