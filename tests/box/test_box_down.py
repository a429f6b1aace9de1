"""`generate.py box down staging` through the CLI, as a user runs it: it must leave no
process and no listener behind, and a second `down` finds nothing to do.

It brings the box down, so it runs last of the modules that share the staging box
(BOX_LAST, tests/box/conftest.py); what they did to the box does not matter to it.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from box.cluster import Cluster
from box.daemon import group_alive, port_open
from box.state import State
from tests.support.box import UpBox, run_cli

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

BOX_ENV = ENV = "staging"
BOX_LAST = True


def test_box_down_leaves_no_process_and_no_listener(box: UpBox) -> None:
    state = State.load(box.folder)
    assert state is not None and state.ready
    cluster = Cluster(state.cluster, box.folder / "kwok")
    pids: dict[str, Any] = {**cluster.component_pids(), **{p.name: p.pgid for p in state.processes}}
    assert set(pids) >= {
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok-controller",
        "kueue",
        "jobset",
        "descheduler",
        "prometheus",
        "kube-prometheus-stack-kube-state-metrics",
        "overflow-gate",
        "gpu-health",
    }
    ports = [int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", box.kubeconfig.read_text())]
    ports += [port for p in state.processes for port in p.ports]
    box.kube.close()
    done = run_cli("box", "down", ENV, box_dir=box.box_dir, timeout=300)
    assert done.returncode == 0, done.stderr
    alive = {name: pid for name, pid in pids.items() if group_alive(pid)}
    assert not alive, alive
    assert not [p for p in ports if port_open(p)]
    assert not box.folder.exists()
    again = run_cli("box", "down", ENV, box_dir=box.box_dir, timeout=60)
    assert again.returncode == 0 and "nothing" in again.stderr
