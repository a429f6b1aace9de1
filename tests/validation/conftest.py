"""Shared fixtures: the pinned CRDs, the built schema set, the kubeconform binary."""

from __future__ import annotations

from pathlib import Path

import pytest

from generators.validation.pinned_crds import CrdPinError
from generators.validation.schemastore import default_crd_dir, ensure_schemas
from tests.support import tool

KUBERNETES_VERSION = "1.36"
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def crd_dir() -> Path:
    """The pinned CRDs (read-only): ../shared/crds here, else the copy fetch-crds made."""
    try:
        return default_crd_dir()
    except CrdPinError as error:  # its one line says to run `python generate.py fetch-crds`
        pytest.fail(str(error), pytrace=False)


@pytest.fixture(scope="session")
def schema_dir(crd_dir: Path) -> Path:
    """The schema set for KUBERNETES_VERSION, from the real cache (built once per key)."""
    return ensure_schemas(KUBERNETES_VERSION, crd_dir)


@pytest.fixture(scope="session")
def kubeconform() -> Path:
    """The pinned kubeconform binary; a missing one fails with the install command."""
    return tool("kubeconform")
