"""Session fixtures for a real control plane, importable by any test folder.

tests/conftest.py imports `control_plane`, `kubeconfig` and `kube` from here, so every
test folder (tests/gate included) gets the same server. The server is started on first
use only: a run that selects no `controlplane` test starts nothing.

A pinned binary that is not installed fails the test with the install command
(ToolNotInstalled's message), as every other missing tool does: CI and `make test` provision
them, and a quiet skip once hid 62 control-plane tests. A server that is installed but
fails to start is an error too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from box.daemon import Daemon
from box.kube import Kube, Obj
from box.kueue import rendered_configuration, start_kueue
from box.manifests import (
    apply_all,
    ensure_external_namespaces,
    environment_files,
    environment_objects,
    install_crds,
    remove_all,
)
from tests.controlplane.harness import ControlPlane
from tests.support import tools
from tests.support.scratch import write_environment

CONTROL_PLANE_TOOLS = ("etcd", "kube-apiserver")


# Paths of the pinned binaries, or fail naming each missing one and how to build it. The
# name the control-plane and box tests use for tests.support.tools.
require_tools = tools


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver on loopback with every CRD of ../shared/crds Established."""
    require_tools(*CONTROL_PLANE_TOOLS)
    plane = ControlPlane(tmp_path_factory.mktemp("controlplane"))
    plane.start()
    try:
        kube = Kube(plane.kubeconfig, plane.workdir / "discovery.json")
        try:
            install_crds(kube)
        finally:
            kube.close()
        yield plane
    finally:
        plane.stop()  # raises if a process or port survived


@pytest.fixture(scope="session")
def kubeconfig(control_plane: ControlPlane) -> Path:
    """Path of an admin kubeconfig (O=system:masters) for the session's apiserver."""
    return control_plane.kubeconfig


@pytest.fixture(scope="session")
def kube(control_plane: ControlPlane) -> Iterator[Kube]:
    """A plain-dict client of the session's apiserver."""
    client = Kube(control_plane.kubeconfig, control_plane.workdir / "discovery.json")
    yield client
    client.close()


@contextmanager
def applied(kube: Kube, objects: list[Obj], extra_namespaces: Sequence[str] = ()) -> Iterator[list[Obj]]:
    """`objects` synced as Argo CD would (with the namespaces other installers own), and on
    exit removed again with every namespace they, or `extra_namespaces`, made: the shipped
    environments reuse names, so a test that left one applied would break the next. A sync
    refused half-way is removed too."""
    external = ensure_external_namespaces(kube, objects)
    try:
        apply_all(kube, objects)
        yield objects
    finally:
        remove_all(kube, objects, [*external, *extra_namespaces])


@dataclass
class KueueScene:
    """A scratch environment applied to the session's apiserver, with the real Kueue running
    on the Configuration that environment renders."""

    kube: Kube
    root: Path  # the scratch repository (rewrite its environment with write_environment)
    objects: list[Obj]  # what was applied, removed again when the scene ends
    kueue: Daemon


@contextmanager
def kueue_scene(
    kube: Kube, control_plane: ControlPlane, root: Path, env: str, text: str
) -> Iterator[KueueScene]:
    """Environment `env` = `text` (beside the shipped _defaults.yaml) under `root`, rendered by
    the real generators, applied, and the pinned Kueue started on its rendered Configuration;
    on exit Kueue stops and every applied object (and namespace it created) is removed."""
    binary = require_tools("kueue")["kueue"]
    write_environment(root, env, text)
    files = environment_files(root, env)
    with applied(kube, environment_objects(root, env)) as objects:
        daemon = start_kueue(binary, control_plane.kubeconfig, rendered_configuration(files), root / "kueue")
        try:
            yield KueueScene(kube, root, objects, daemon)
        finally:
            daemon.stop()
