"""Scene inference-scales on the shared staging box at speed 30: inference scales under load and
the surplus spills.

`generate.py box up staging --speed 30 --argocd` as a user runs it (the box the Argo CD,
bad-node, day-in-the-life and fault modules share), then `box scene inference-scales staging`
through the CLI. At speed 30 the gate holds 30 / 30 = 1 s before it opens and 300 / 30 = 10 s
before it closes again, so the scene leaves the box as found; the HPA's scale-up policy and
sync period are Kubernetes' own, not divided. Every actor is the real one: the rendered
prometheus-adapter v0.12.0 (its rendered arguments and ConfigMap, its relist sped up as every
box at a speed runs it, box/adapter.py; as its ServiceAccount, registered with the
kube-apiserver's aggregator by the rendered APIService), kube-controller-manager's HPA, Deployment and
ReplicaSet controllers, kube-scheduler, the overflow gate and KWOK. The load series is
synthetic (box/series.py). Expected numbers are staging's spec, worked by hand
(environments/staging.yaml): chat-api min 2 / max 12, averageValue 4; pool infer-l40s 8
nodes of 8 GPUs; provider mock 8 GPUs. A replica takes a whole node (8 GPUs), so the pool
holds 8, the mock 1: the scene asks for 9 = min(12, 8 + 1) with a load of 9 x 4 = 36.
"""

from __future__ import annotations

import re

import pytest

from box.kube import wait_for
from tests.support.box import SceneRun

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

BOX_ENV = ENV = "staging"  # the shared staging box at speed 30 (tests/box/conftest.py)
BOX_SPEED = 30
BOX_ARGOCD = True  # deployed by Argo CD: the Argo CD scenes share the box
SCENE = "inference-scales"
SCENE_SECONDS = 900


def _line(scene: SceneRun, pattern: str) -> re.Match[str]:
    found = re.search(pattern, scene.done.stdout, re.MULTILINE)
    assert found is not None, f"{pattern!r} not in:\n{scene.done.stdout}\n{scene.done.stderr[-4000:]}"
    return found


def test_the_scene_passes(scene: SceneRun) -> None:
    assert scene.done.returncode == 0, scene.done.stdout + scene.done.stderr[-4000:]


def test_the_adapter_serves_the_load_through_the_aggregator(scene: SceneRun) -> None:
    """The rendered adapter, reached by the real aggregator: 0 at rest, 36 under load."""
    found = _line(scene, r"vllm_num_requests_waiting = (\S+) at rest, (\S+) under load")
    assert found.groups() == ("0", "36")


def test_the_hpa_controller_asked_for_what_the_load_needs(scene: SceneRun) -> None:
    """kube-controller-manager's HPA controller: ceil(36 / 4) = 9, within 2..12, in steps
    (scale-up policy: at most max(4 pods, 100%) per 15 s, so 2 -> 6 -> 9)."""
    assert _line(scene, r"HPA desiredReplicas (\d+) \(wanted (\d+)\)").groups() == ("9", "9")
    events = _line(scene, r"HPA controller events: (.*)$").group(1)
    sizes = [int(n) for n in re.findall(r"New size: (\d+)", events)]
    assert sizes and sizes[-1] == 9 and sizes == sorted(sizes), events


def test_the_replicaset_made_them_and_the_surplus_spilled(scene: SceneRun) -> None:
    """8 replicas on the pool's 8 nodes, the 9th on vk-mock once the gate opened."""
    assert _line(scene, r"Deployment replicas (\d+), ReplicaSet replicas (\d+)").groups() == ("9", "9")
    assert _line(scene, r"gates open \(no \S+ taint\): (.*)$").group(1) == "vk-mock"
    placed = _line(scene, r"pods: (\d+) in-cluster, spilled (.*), (\d+) pending")
    assert placed.groups() == ("8", "vk-mock: 1", "0")


def test_the_scene_removed_its_deployment(scene: SceneRun) -> None:
    wait_for(
        lambda: scene.kube.get("apps/v1", "Deployment", "chat-api", "serving-staging") is None,
        60,
        "the scene's Deployment gone",
    )
