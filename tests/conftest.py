"""Fixtures every test folder shares: the control plane (a real kube-apiserver + etcd, issue
7) and throwaway copies of the repository's data; the markers that follow from what a test
uses. Helpers live in tests/support/ (docs/testing.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# Session fixtures for a real kube-apiserver + etcd, shared by every test folder.
from tests.controlplane.fixtures import control_plane, kube, kubeconfig  # noqa: F401
from tests.support import CORPUS, ROOT  # noqa: F401  (old import path, for branches in flight)
from tests.support.examples import EDIT_LOOP_EXAMPLES
from tests.support.scratch import copy_repo

# `make test-fast` runs `--hypothesis-profile=edit-loop`: property tests draw a quarter of
# their examples (tests/support/examples.py); the whole suite keeps Hypothesis's default.
settings.register_profile("edit-loop", max_examples=EDIT_LOOP_EXAMPLES)

# A test that uses one of these fixtures starts that server: its markers follow from it, so
# `make test-fast` (-m "not controlplane and not slow") can never start one by a forgotten
# marker. `kube` and `kubeconfig` depend on `control_plane`, so they count too.
SERVER_FIXTURES = {"control_plane": ("controlplane", "slow"), "prometheus_url": ("slow",)}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`controlplane` and `slow` from the servers a test uses; every `controlplane` test is
    `slow` too (an apiserver takes seconds to start and to settle)."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        wanted = {mark for fixture, marks in SERVER_FIXTURES.items() if fixture in used for mark in marks}
        if item.get_closest_marker("controlplane"):
            wanted.add("slow")
        for mark in sorted(wanted):
            if item.get_closest_marker(mark) is None:
                item.add_marker(getattr(pytest.mark, mark))


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """A copy of environments/ and rendered/ to run the CLI against (code stays shared)."""
    return copy_repo(tmp_path)
