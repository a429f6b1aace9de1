"""Scene day-in-the-life on staging's box (`box up staging --speed 30`).

Every actor is the real one: kube-scheduler v1.36.5 preempts and places, Kueue v0.19.2
admits, the kube-controller-manager's ReplicaSet, job, disruption and HPA controllers act,
KWOK v0.8.0 plays the kubelets (the gang held Running by the box's pod-complete Stage), the
gate counts free GPUs from the box's Prometheus scraping kube-state-metrics, the descheduler
v0.36.0 evicts. The scene writes a Deployment and a Job; the tests assert on what those
controllers wrote (Workload admission, events, pod nodeName, node taints, gate metrics).

Expected values are staging's, worked by hand from environments/staging.yaml: 8 infer-l40s
nodes x 8 GPUs, vk-mock advertises 8 GPUs, inference replicas of 2 GPUs: (8 + 8) / 2 = 8
replicas (16 GPUs: 48 free, above closeWhenFreeGpusAtLeast 16); the gang takes 7 nodes, the
8th holds 4 replicas, so 4 spill and fill vk-mock; migrateBack caps 2 per cycle, the PDB
allows 1 unavailable of 8. Speed 30 divides closeAfterSeconds 300 to 10, deschedulingInterval
2m to 4s, minPodAge 5m to 10s: the highest speed that still changes anything (docs/controlplane.md,
"A day in the life", for the speeds tried and why).
"""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from box.kube import Kube, Obj, wait_for
from box.scenes.context import SceneContext
from box.scenes.day_in_the_life import DayInTheLife, day_in_the_life
from box.state import BOX_DIR_ENV, State
from box.up import rendered
from tests.support import ROOT
from tests.support.box import UpBox

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

BOX_ENV = ENV = "staging"  # the shared staging box at speed 30 (tests/box/conftest.py)
BOX_SPEED = SPEED = 30
BOX_ARGOCD = True  # deployed by Argo CD: the Argo CD scenes share the box
NAMESPACE = "serving-staging"
VIRTUAL = "vk-mock"


@dataclass
class Day:
    result: DayInTheLife
    kube: Kube
    state: State
    said: list[str]
    # The shared box may have run the day before (the no-drift scene runs it): its Events and
    # the gate's counters are history this run must not count.
    began: str  # when the scene began, as Events stamp creationTimestamp (whole seconds, UTC)
    opened_before: float
    closed_before: float


@pytest.fixture(scope="module")
def day(box: UpBox) -> Day:
    """The scene run once, in-process, on the module's box."""
    with pytest.MonkeyPatch.context() as patch:  # the scene's paths, as the CLI resolves them
        patch.setenv(BOX_DIR_ENV, str(box.box_dir))
        env, _ = rendered(ROOT, ENV, box.state.scale, box.folder, box.state.speed)
        said: list[str] = []
        began = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        opened, closed = (transitions(box.state, direction) for direction in ("open", "close"))
        result = day_in_the_life(SceneContext(box.kube, env, box.state, box.folder, said.append))
    print("\n".join(result.lines()))  # the timeline, in the test log
    return Day(result, box.kube, box.state, said, began, opened, closed)


def events(day: Day) -> list[Obj]:
    """This run's Events in the serving namespace."""
    found = day.kube.list("events.k8s.io/v1", "Event", NAMESPACE)
    return [e for e in found if e["metadata"]["creationTimestamp"] >= day.began]


def gate_sample(state: State, name: str, **labels: str) -> float | None:
    """The gate process's own sample `name{labels}` (labels in any printed order), None if
    it has none yet."""
    [process] = [p for p in state.processes if p.name == "overflow-gate"]
    with urllib.request.urlopen(f"http://127.0.0.1:{process.ports[0]}/metrics", timeout=10) as response:
        lines = response.read().decode().splitlines()
    wanted = {f'{k}="{v}"' for k, v in labels.items()}
    found = [
        line
        for line in lines
        if line.startswith(name + "{") and set(line[len(name) + 1 : line.index("}")].split(",")) == wanted
    ]
    assert len(found) <= 1, found
    return float(found[0].rsplit(" ", 1)[1]) if found else None


def transitions(state: State, direction: str) -> float:
    """The gate's transitions of the virtual node so far (a counter: none yet is 0)."""
    return gate_sample(state, "trainyard_gate_transitions_total", gate="mock", direction=direction) or 0.0


def test_the_day_keeps_every_promise(day: Day) -> None:
    assert day.result.ok, day.result.lines()
    text = "\n".join(day.result.lines())
    for part in ("time to spill", "fewest ready inference replicas", "evictions per cycle", "time back"):
        assert part in text


def test_kueue_admits_the_gang_on_the_borrowed_inference_pool(day: Day) -> None:
    """Read from the Workload's status.admission while the gang ran. No topology assignment:
    foundation-flex covers only the plain L40S pool, and Kueue applies TAS to a queue only
    when all its flavors have a Topology (README, "Quotas come from the inventory")."""
    expected = {"clusterQueue": "foundation-flex", "flavor": "infer-l40s", "topology": None}
    assert day.result.admission == expected


def test_the_scheduler_preempts_inference_for_the_gang(day: Day) -> None:
    """The 7 nodes the gang takes held every replica but those on the 8th node (at most 4 of
    2 GPUs): at least 4 victims, each with the scheduler's Preempted event."""
    preempted = [e for e in events(day) if e.get("reason") == "Preempted"]
    assert len(preempted) >= 4, preempted
    assert all(e["regarding"]["name"].startswith("chat-api-") for e in preempted)
    assert day.result.preempted == len(preempted)


def test_the_spill_lands_on_the_virtual_node_while_the_gate_is_open(day: Day) -> None:
    scheduled = [
        e
        for e in events(day)
        if e.get("reason") == "Scheduled" and e.get("note", "").endswith(f" to {VIRTUAL}")
    ]
    assert len(scheduled) == 4, [e.get("note") for e in scheduled]
    assert day.result.spilled == 4
    assert 1 <= day.result.fewest_ready < 8  # preemption took replicas; some always served


def test_the_gate_opened_once_and_closed_after_its_hysteresis(day: Day) -> None:
    assert transitions(day.state, "open") - day.opened_before == 1
    assert transitions(day.state, "close") - day.closed_before == 1
    assert gate_sample(day.state, "trainyard_gate_closed", gate="mock") == 1
    node = day.kube.get("v1", "Node", VIRTUAL)
    assert node is not None
    closed = {"key": "trainyard.dev/overflow-gate", "value": "closed", "effect": "NoSchedule"}
    assert closed in node["spec"]["taints"]
    assert day.result.gate_held_seconds >= 300 / SPEED - 2  # closeAfterSeconds 300 / 30 = 10 s


def test_the_descheduler_moves_inference_back_in_capped_steps_within_the_pdb(day: Day) -> None:
    evicted = [e for e in events(day) if e.get("action") == "Descheduled" and e.get("type") == "Normal"]
    assert len(evicted) == 4, evicted
    note = f"pod eviction from {VIRTUAL} node by sigs.k8s.io/descheduler"
    assert all(e.get("note") == note for e in evicted)
    assert sum(day.result.evictions_per_cycle) == 4
    assert max(day.result.evictions_per_cycle) <= 2  # maxPodsToEvictTotal 2
    assert day.result.fewest_moving >= 7  # PDB maxUnavailable 1 of 8


def test_the_scene_removed_what_it_created(day: Day) -> None:
    pods = "app.kubernetes.io/name=chat-api"
    wait_for(
        lambda: (
            not day.kube.list("v1", "Pod", NAMESPACE, label_selector=pods)
            and not day.kube.list("batch/v1", "Job", "foundation", label_selector="trainyard.dev/box-scene")
        ),
        120,
        "the scene's Deployment, Job and their pods gone",
    )
