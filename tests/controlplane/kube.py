"""Moved to generators/box/kube.py (the cluster in a box uses it too); this module keeps
the old import path for the tests that use it."""

from __future__ import annotations

from generators.box.kube import (
    FIELD_MANAGER,
    Kube,
    Obj,
    condition,
    is_true,
    namespaced_kinds,
    purge_namespaces,
    refusal,
    wait_for,
    wait_gone,
    wait_true,
)

__all__ = [
    "FIELD_MANAGER",
    "Kube",
    "Obj",
    "condition",
    "is_true",
    "namespaced_kinds",
    "purge_namespaces",
    "refusal",
    "wait_for",
    "wait_gone",
    "wait_true",
]
