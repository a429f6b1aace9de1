"""Fixtures every test folder shares: the control plane (a real kube-apiserver + etcd, issue
7) and throwaway copies of the repository's data. Helpers live in tests/support/."""

from __future__ import annotations

from pathlib import Path

import pytest

# Session fixtures for a real kube-apiserver + etcd (issue 7), shared by every test folder.
from tests.controlplane.fixtures import control_plane, kube, kubeconfig  # noqa: F401
from tests.support import CORPUS, ROOT  # noqa: F401  (old import path, for branches in flight)
from tests.support.scratch import copy_repo


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """A copy of environments/ and rendered/ to run the CLI against (code stays shared)."""
    return copy_repo(tmp_path)
