"""Shared fixtures: the repository root and throwaway copies of it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

# Session fixtures for a real kube-apiserver + etcd (issue 7), shared by every test folder.
from tests.controlplane.fixtures import control_plane, kube, kubeconfig  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"


@pytest.fixture
def repo_copy(tmp_path: Path) -> Iterator[Path]:
    """A copy of environments/ and rendered/ to run the CLI against (code stays shared)."""
    for folder in ("environments", "rendered"):
        if (ROOT / folder).exists():
            shutil.copytree(ROOT / folder, tmp_path / folder)
    yield tmp_path
