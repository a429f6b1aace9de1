"""Two GPU generations in one team's queue, decided by the real Kueue.

A team holds shares of a GB200 pool (arm64 hosts, 4 GPUs per tray) and an H100 pool (amd64,
8 per node); both land in one ClusterQueue, flavors in the order the pools are written.
Each pool pins `kubernetes.io/arch` in its nodeLabels (the spec refuses a mixed queue
without it), so the flavors carry it, and Kueue's flavor assignment skips a flavor whose
nodeLabels contradict the job's nodeSelector (pkg/scheduler/flavorassigner in v0.19.2):
a job picks its generation by `nodeSelector: {kubernetes.io/arch: ...}`. Expected flavors
are the literal pool names of the spec below.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from box.kube import Kube, Obj
from tests.controlplane import jobs
from tests.controlplane.fixtures import KueueScene, kueue_scene
from tests.controlplane.harness import ControlPlane

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

ENV = "two-generations"
NAMESPACE = "gen-team"
ENVIRONMENT = f"""\
extends: _defaults.yaml
name: {ENV}
cluster:
  kubernetesVersion: "1.36.2"
pools:
  - name: train-gb200
    role: training
    gpu: {{model: GB200, perNode: 4}}
    nodes: 4
    cpu: 144
    memory: 1800Gi
    nodeLabels: {{trainyard.dev/pool: train-gb200, kubernetes.io/arch: arm64}}
  - name: train-h100
    role: training
    gpu: {{model: H100-SXM5-80GB, perNode: 8}}
    nodes: 4
    cpu: 192
    memory: 1800Gi
    nodeLabels: {{trainyard.dev/pool: train-h100, kubernetes.io/arch: amd64}}
teams:
  - name: gen-team
    namespaces: [{NAMESPACE}]
    shares: {{train-gb200: 100, train-h100: 100}}
# No kubelet runs pods here: admission must not wait for earlier gangs to become Ready.
kueue:
  waitForPodsReady:
    blockAdmission: false
"""


@pytest.fixture(scope="module")
def scene(
    kube: Kube, control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KueueScene]:
    root = tmp_path_factory.mktemp("two-generations")
    with kueue_scene(kube, control_plane, root, ENV, ENVIRONMENT) as scene:
        yield scene


def _job(arch: str | None, gpus_per_pod: int) -> Obj:
    job = jobs.gpu_job(
        f"gen-{arch or 'any'}-{uuid.uuid4().hex[:6]}",
        NAMESPACE,
        NAMESPACE,
        "training",
        pods=2,
        gpus_per_pod=gpus_per_pod,
    )
    if arch is not None:
        job["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/arch": arch}
    return job


def _flavor(kube: Kube, job: Obj) -> str:
    workload = jobs.wait_admitted(kube, jobs.submit(kube, job))
    [pod_set] = workload["status"]["admission"]["podSetAssignments"]
    flavors = set(pod_set["flavors"].values())
    assert len(flavors) == 1, pod_set
    return str(flavors.pop())


def test_the_flavors_carry_the_architecture(scene: KueueScene) -> None:
    flavors = {
        o["metadata"]["name"]: o["spec"]["nodeLabels"] for o in scene.objects if o["kind"] == "ResourceFlavor"
    }
    assert flavors == {
        "train-gb200": {"trainyard.dev/pool": "train-gb200", "kubernetes.io/arch": "arm64"},
        "train-h100": {"trainyard.dev/pool": "train-h100", "kubernetes.io/arch": "amd64"},
    }
    [queue] = [o for o in scene.objects if o["kind"] == "ClusterQueue"]
    assert [f["name"] for f in queue["spec"]["resourceGroups"][0]["flavors"]] == ["train-gb200", "train-h100"]


def test_a_job_picks_its_generation_by_architecture(scene: KueueScene) -> None:
    kube = scene.kube
    assert _flavor(kube, _job("amd64", 8)) == "train-h100"
    arm = _job("arm64", 4)
    assert _flavor(kube, arm) == "train-gb200"
    # Kueue keeps the job's selector and adds the flavor's labels: the pods go to GB200 trays.
    selector = jobs.reread(kube, arm)["spec"]["template"]["spec"]["nodeSelector"]
    assert selector == {"kubernetes.io/arch": "arm64", "trainyard.dev/pool": "train-gb200"}


def test_a_job_without_a_selector_gets_the_first_flavor_that_fits(scene: KueueScene) -> None:
    # Without a selector Kueue takes the first flavor in the queue's order with room: the
    # first pool written (GB200). Hence the job recipe selects (docs/scheduling.md).
    assert _flavor(scene.kube, _job(None, 4)) == "train-gb200"
