"""Moved to generators/box/manifests.py (the cluster in a box uses it too); this module keeps
the old import path for the tests that use it."""

from __future__ import annotations

from generators.box.manifests import (
    CRD_ESTABLISHED_SECONDS,
    EXTERNAL_NAMESPACES,
    REPO_ROOT,
    SYNC_WAVE,
    apply_all,
    crd_documents,
    ensure_external_namespaces,
    environment_files,
    environment_objects,
    foreign_namespaces,
    identity,
    in_sync_wave_order,
    install_crds,
    remove_all,
    wave_key,
)

__all__ = [
    "CRD_ESTABLISHED_SECONDS",
    "EXTERNAL_NAMESPACES",
    "REPO_ROOT",
    "SYNC_WAVE",
    "apply_all",
    "crd_documents",
    "ensure_external_namespaces",
    "environment_files",
    "environment_objects",
    "foreign_namespaces",
    "identity",
    "in_sync_wave_order",
    "install_crds",
    "remove_all",
    "wave_key",
]
