"""The harness itself: server up, CRDs in, admin identity, clean namespaces, clean stop."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from box.daemon import group_alive, port_open
from box.kube import Kube, is_true, purge_namespaces, wait_for
from box.manifests import crd_documents
from tests.controlplane.fixtures import CONTROL_PLANE_TOOLS, require_tools
from tests.controlplane.harness import ControlPlane

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]


def test_every_pinned_crd_is_established(kube: Kube) -> None:
    documents = crd_documents()
    assert len(documents) >= 11  # Kueue alone ships 11
    for crd in documents:
        stored = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd["metadata"]["name"])
        assert is_true(stored, "Established"), crd["metadata"]["name"]


def test_server_reports_the_pinned_version(kube: Kube) -> None:
    from tools.toolchain import PINS

    assert kube.raw_get("/version")["gitVersion"] == PINS["kube-apiserver"]


def test_admin_is_a_cluster_admin(kube: Kube) -> None:
    review = kube.create(
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "SelfSubjectReview",
            "metadata": {"name": "ignored"},
        }
    )
    assert "system:masters" in review["status"]["userInfo"]["groups"]


def test_purged_namespace_can_be_recreated_empty(kube: Kube) -> None:
    """purge_namespaces stands in for the namespace controller; prove it leaves nothing."""
    name = f"scratch-{uuid.uuid4().hex[:6]}"
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": name}})
    purge_namespaces(kube, [name])
    assert kube.get("v1", "Namespace", name) is None
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert kube.get("v1", "ConfigMap", "x", name) is None
    purge_namespaces(kube, [name])


def test_a_second_control_plane_stops_without_leftovers(tmp_path: Path) -> None:
    """Start and stop a separate instance: processes and ports must be gone afterwards."""
    require_tools(*CONTROL_PLANE_TOOLS)
    plane = ControlPlane(tmp_path / "second")
    plane.start()
    daemons = [plane.etcd, plane.apiserver]
    ports = [port for daemon in daemons if daemon for port in daemon.ports]
    assert all(port_open(port) for port in ports)
    plane.stop()  # raises DaemonFailed if anything survived
    assert not any(port_open(port) for port in ports)
    assert all(daemon is not None and not daemon.running() for daemon in daemons)


ZOMBIE_CHILD = """
import os, time
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)  # a group of its own, then exit: a zombie its parent never collects
    os._exit(0)
print(pid, flush=True)
time.sleep(60)
"""


def test_a_group_left_with_only_a_zombie_is_stopped() -> None:
    """`box down` waits until each group is gone: a zombie has exited (no port, no memory)
    but killpg(pgid, 0) still finds it until its parent or init collects it, which on this
    machine took about 2 s per stopped process (box/daemon.py)."""
    parent = subprocess.Popen(
        [sys.executable, "-c", ZOMBIE_CHILD], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        stat = Path(f"/proc/{child}/stat")
        wait_for(lambda: stat.read_text().rsplit(")", 1)[1].split()[0] == "Z", 10, "the child a zombie")
        os.killpg(child, 0)  # the group still "exists" for the kernel's signal check
        assert not group_alive(child)
    finally:
        parent.kill()
        parent.wait()
