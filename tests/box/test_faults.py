"""The fault scenes on one staging box (`box up staging --speed 30`), one after another.

Each scene (box/scenes/fault_*.py) breaks one part of the running loop and samples the
invariants of box/invariants.py every second from before the fault until the loop has
settled; it exits 1 on the first violated invariant and removes what it created, so the next
scene starts from the same cluster (tests/box/test_invariants.py makes every invariant
fail on purpose). The scenes share this one box: each leaves the gate closed, no quarantine,
no workload of its own and the box's processes as it found them (a process it restarted is
recorded again in the box's state file).

Expected values are staging's, worked by hand from environments/staging.yaml at speed 30:
closeAfterSeconds 300 / 30 = 10 s, so Prometheus is down for 2 x 10 = 20 s; the one provider
is `mock`, its node `vk-mock`; the gate's Lease (the gate's default, not sped up) lasts 15 s
and is retried every 2 s; 8 chat-api replicas of 2 GPUs, 4 of them spilled while the 7-node
gang runs.
"""

from __future__ import annotations

import re

import pytest

from tests.support.box import UpBox, run_scene

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

BOX_ENV = "staging"  # one box for the whole module (tests/box/conftest.py)
BOX_SPEED = 30
BOX_ARGOCD = True  # deployed by Argo CD: the Argo CD scenes share the box
# Shares the speed-30 staging box with bad-node and day-in-the-life, after them: the scenes
# restart Kueue, kube-apiserver and the controllers and add a gate replica, which the as-found
# check between modules would name (tests/box/conftest.py).
BOX_LEAVES = "processes restarted by the faults (Kueue, kube-apiserver, the gate and health controller)"
SCENE_SECONDS = 300  # each scene takes 20 to 90 s on the box; generous for a loaded machine
LEASE_SECONDS, RETRY_SECONDS = 15, 2


def _ran(box: UpBox, scene: str) -> str:
    """Run `scene` on the box and print its output (pytest shows it when a test fails); it
    must exit 0 with every sample of the invariants held."""
    run = run_scene(box, scene, SCENE_SECONDS)
    out = run.done.stdout
    print(out)
    assert run.done.returncode == 0, f"{out}\n{run.done.stderr[-3000:]}"
    assert re.search(r"\d+ samples of the invariants( \([^)]*\))?, all held", out), out
    return out


def _seconds(pattern: str, out: str) -> tuple[float, ...]:
    """The timings `pattern`'s groups capture in the scene's output, which must hold it."""
    found = re.search(pattern, out)
    assert found, out
    return tuple(float(group) for group in found.groups())


def test_prometheus_down_mid_spill_the_gate_holds_and_the_loop_resumes(box: UpBox) -> None:
    out = _ran(box, "prometheus-down")
    assert "FAULT: Prometheus stopped (SIGTERM, TSDB kept) inside that hold, for 20s" in out
    assert "held for 20s: vk-mock still open, transitions unchanged, quarantined nodes unchanged" in out
    assert re.search(r"failed queries, gate [1-9]\d*, health controller [1-9]\d*", out), out
    assert "the gate closed vk-mock on its own" in out
    assert "settled: 8 replicas home, vk-mock closed" in out


def test_gate_leader_killed_mid_transition_the_stand_by_takes_over_once(box: UpBox) -> None:
    out = _ran(box, "gate-leader-killed")
    (taken,) = _seconds(r"took the Lease \(\S+\) ([\d.]+)s after the kill", out)
    assert taken <= LEASE_SECONDS + RETRY_SECONDS + 2  # two 1 s samples of slack
    assert "its transitions (open, close) since the steady state 1, 0" in out
    assert "the new leader closed vk-mock: its transitions (open, close) (0.0, 1.0), taint patches 1" in out
    assert "started again and stands by" in out


def test_quarantine_storm_the_caps_hold_the_alert_fires_and_the_release_follows(box: UpBox) -> None:
    """staging: cap {maxNodes: 1, maxPercentOfPool: 5} on train-h100 (32 nodes): 1 node at
    most; 3 nodes bad, then 3 more: 1 quarantined, 5 held back; XID window 20 s (errorWindow
    10m / 30, floored at 20 s) + releaseAfterSeconds 1800 / 30 = 60 s before the release."""
    out = _ran(box, "quarantine-storm")
    assert "quarantined ['train-h100-000'] (the cap used), held back 2" in out
    assert "held: quarantined ['train-h100-000'], held back 5; GpuHealthCapHoldsBack firing: True" in out
    (released,) = _seconds(r"released \['train-h100-000'\] ([\d.]+)s after the errors stopped", out)
    assert 20 + 60 - 2 <= released <= 20 + 60 + 60  # window + cool-down, passes, load


def test_provider_down_while_open_nothing_lands_there_until_it_is_ready(box: UpBox) -> None:
    """kwokctl's box runs kube-controller-manager with --node-monitor-period=25s: the spilled
    pods tolerate a NotReady node for max(300 / 30, 25 + 5) = 30 s (the scene's module
    docstring); staging spills 4 of 8 replicas to vk-mock."""
    out = _ran(box, "provider-down")
    assert "tolerating a NotReady node for 30s" in out
    assert "FAULT: the provider fails: vk-mock reports Ready=False" in out
    _, no_execute = _seconds(r"NoSchedule \+([\d.]+)s and NoExecute \+([\d.]+)s after the fault", out)
    assert no_execute <= 25 + 10  # one monitor period, and a loaded machine's slack
    (replaced,) = _seconds(
        r"evicted \(taint eviction after 30s\) and replaced \+([\d.]+)s after the fault", out
    )
    assert no_execute + 30 - 2 <= replaced  # not before the toleration ran out
    assert (
        "4 replacements Pending (the gang holds infer-l40s; vk-mock refuses them), the gate still open" in out
    )
    assert "the 4 replacements Running there" in out
    assert "the gate counted no transition" in out


def _preempted_once(out: str) -> None:
    """staging's foundation queue: nominal 128 + borrowing limit 120 = 248 GPUs, 31 whole
    H100 nodes at `training`; 4 nodes at `training-critical` preempt them."""
    assert re.search(
        r"fault-low-\w+: 31 x 8 GPUs at training admitted in foundation and running \(248 GPUs", out
    )
    assert re.search(
        r"fault-high-\w+ admitted and its 4 pods running, fault-low-\w+ stopped \(0 running\)", out
    )
    # Admissions are judged from the Workloads (the `admission` invariant, in "all held"): the
    # newcomer reserved once; the preempted gang once, or again only as a requeue after its
    # eviction completed (docs/overflow.md, kueue-restart), which the scene then spells out.
    seen = re.search(r"quota reservations seen fault-low-\w+ (\d+), fault-high-\w+ 1;", out)
    assert seen, out
    assert re.search(r"Admitted events \{'fault-low-\w+': [1-9]\d*, 'fault-high-\w+': 1\}", out), out
    if int(seen.group(1)) > 1:
        assert re.search(r"fault-low-\w+ admitted again after its eviction completed", out), out
    assert "the gate and the health controller passing again" in out


def test_kueue_restarted_during_a_preemption_admits_once_and_stops_the_whole_gang(box: UpBox) -> None:
    out = _ran(box, "kueue-restart")
    assert "FAULT: the Kueue controller stopped (SIGTERM)" in out
    _preempted_once(out)


def test_apiserver_restarted_during_a_preemption_loses_nothing(box: UpBox) -> None:
    out = _ran(box, "apiserver-restart")
    assert "FAULT: kube-apiserver killed (SIGKILL; etcd keeps the data), down 5s" in out
    _preempted_once(out)
