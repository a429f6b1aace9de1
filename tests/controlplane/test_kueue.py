"""What the real Kueue controller does with the rendered queues.

A tiny environment (one 8-GPU pool of 12 nodes; team alpha owns 67 %, team beta 33 %, no
cohort, so no borrowing blurs the numbers) is written next to the shipped _defaults.yaml,
rendered by the real generators, applied, and driven with suspended 64-GPU Jobs. The
largest-remainder split gives alpha 8 nodes (64 GPUs) and beta 4 (32); with 10 nodes,
alpha gets 7 (56).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from box.kube import Kube, Obj, condition, is_true, wait_true
from box.manifests import apply_all, environment_objects
from box.scenes.workloads import workload_of
from tests.controlplane import jobs
from tests.controlplane.fixtures import KueueScene, kueue_scene
from tests.controlplane.harness import ControlPlane
from tests.support.scratch import write_environment

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

ENV = "kueue-e2e"
TEAMS = ("alpha", "beta")
ENVIRONMENT = """\
extends: _defaults.yaml
name: kueue-e2e
cluster:
  displayName: Kueue behaviour test
  kubernetesVersion: "1.36.2"
  argocd:
    syncPolicy: automated
pools:
  - name: gpu
    role: training
    gpu: {{model: H100-SXM5-80GB, perNode: 8}}
    nodes: {nodes}
    cpu: 192
    memory: 1800Gi
    nodeLabels: {{trainyard.dev/pool: gpu}}
teams:
  - name: alpha
    namespaces: [alpha]
    shares: {{gpu: 67}}
  - name: beta
    namespaces: [beta]
    shares: {{gpu: 33}}
# One pool without topology, like dev: admission blocks until the admitted pods are Ready.
kueue:
  waitForPodsReady:
    blockAdmission: true
"""
KUEUE_API = "kueue.x-k8s.io/v1beta2"
# Kueue's two refusals: the request exceeds the queue's whole quota, or only what is unused.
EXCEEDS_QUOTA = "insufficient quota for nvidia.com/gpu in flavor gpu"
QUOTA_IN_USE = "insufficient unused quota for nvidia.com/gpu in flavor gpu, 64 more needed"


@pytest.fixture(scope="module")
def scenario(
    kube: Kube, control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KueueScene]:
    root = tmp_path_factory.mktemp("kueue-env")
    with kueue_scene(kube, control_plane, root, ENV, ENVIRONMENT.format(nodes=12)) as scene:
        yield scene


@pytest.fixture
def clean(scenario: KueueScene) -> Iterator[KueueScene]:
    """Each test starts with no Jobs or Workloads in the team namespaces."""
    yield scenario
    for namespace in TEAMS:
        for kind, version in (("Job", "batch/v1"), ("Workload", "kueue.x-k8s.io/v1beta2")):
            for item in scenario.kube.list(version, kind, namespace):
                scenario.kube.delete(version, kind, item["metadata"]["name"], namespace)
    assert scenario.kueue.running(), scenario.kueue.log_tail()


def job(team: str, priority: str, pods: int = 8) -> Obj:
    return jobs.gpu_job(f"{team}-{priority}-{uuid.uuid4().hex[:6]}", team, team, priority, pods=pods)


def gpu_quota(kube: Kube, queue: str) -> str:
    cluster_queue = kube.get("kueue.x-k8s.io/v1beta2", "ClusterQueue", queue)
    assert cluster_queue is not None
    [flavor] = cluster_queue["spec"]["resourceGroups"][0]["flavors"]
    return str(next(r["nominalQuota"] for r in flavor["resources"] if r["name"] == "nvidia.com/gpu"))


def test_every_cluster_queue_becomes_active(clean: KueueScene) -> None:
    queues = [obj["metadata"]["name"] for obj in clean.objects if obj["kind"] == "ClusterQueue"]
    assert sorted(queues) == sorted(TEAMS)
    for name in queues:
        wait_true(clean.kube, KUEUE_API, "ClusterQueue", name, "Active", jobs.KUEUE_SECONDS)
    for obj in clean.objects:
        if obj["kind"] == "LocalQueue":
            meta = obj["metadata"]
            wait_true(
                clean.kube,
                KUEUE_API,
                "LocalQueue",
                meta["name"],
                "Active",
                jobs.KUEUE_SECONDS,
                meta["namespace"],
            )


def test_64_gpu_job_is_admitted_within_quota_and_pends_beyond_it(clean: KueueScene) -> None:
    kube = clean.kube
    assert (gpu_quota(kube, "alpha"), gpu_quota(kube, "beta")) == ("64", "32")
    fits = jobs.submit(kube, job("alpha", "training"))
    workload = jobs.wait_admitted(kube, fits)
    assert workload["spec"]["priority"] == 900000  # the rendered WorkloadPriorityClass `training`
    admission = workload["status"]["admission"]
    assert admission["clusterQueue"] == "alpha"
    [pod_set] = admission["podSetAssignments"]
    assert pod_set["flavors"] == {"nvidia.com/gpu": "gpu", "cpu": "gpu", "memory": "gpu"}
    assert pod_set["resourceUsage"]["nvidia.com/gpu"] == "64" and pod_set["count"] == 8
    # Kueue injected the flavor's node labels, so the gang lands on the pool's nodes.
    selector = jobs.reread(kube, fits)["spec"]["template"]["spec"].get("nodeSelector")
    assert selector == {"trainyard.dev/pool": "gpu"}
    jobs.pods_started(kube, fits)  # waitForPodsReady.blockAdmission would hold everything else

    too_big = jobs.submit(kube, job("beta", "training"))
    pending = jobs.wait_pending(kube, too_big, EXCEEDS_QUOTA)
    assert "maximum capacity (32)" in condition(pending, "QuotaReserved")["message"]  # type: ignore[index]


def test_training_critical_preempts_training_in_the_same_queue(clean: KueueScene) -> None:
    kube = clean.kube
    low = jobs.submit(kube, job("alpha", "training"))
    jobs.wait_admitted(kube, low)
    jobs.pods_started(kube, low)

    high = jobs.submit(kube, job("alpha", "training-critical"))

    victim = jobs.wait_preempted(kube, low)
    # withinClusterQueue: LowerPriority, as rendered; no cohort, so in the ClusterQueue.
    assert condition(victim, "Preempted")["reason"] == "InClusterQueue"  # type: ignore[index]
    winner = jobs.wait_admitted(kube, high)
    assert winner["spec"]["priority"] == 1000000
    jobs.pods_started(kube, high)
    jobs.wait_pending(kube, low, QUOTA_IN_USE)

    # LowerPriority, not LowerOrNewerEqualPriority: an equal-priority newcomer waits.
    peer = jobs.submit(kube, job("alpha", "training-critical"))
    jobs.wait_pending(kube, peer, QUOTA_IN_USE)
    assert not is_true(workload_of(kube, high), "Evicted")


def test_fewer_nodes_give_smaller_quotas_that_are_enforced(clean: KueueScene) -> None:
    kube = clean.kube
    before = jobs.submit(kube, job("alpha", "training"))
    jobs.wait_admitted(kube, before)
    kube.delete("batch/v1", "Job", before["metadata"]["name"], "alpha")
    kube.delete("kueue.x-k8s.io/v1beta2", "Workload", workload_of(kube, before)["metadata"]["name"], "alpha")  # type: ignore[index]

    # two nodes left the pool (an inventory change)
    write_environment(clean.root, ENV, ENVIRONMENT.format(nodes=10))
    shrunk = environment_objects(clean.root, ENV)
    try:
        apply_all(kube, shrunk)
        assert gpu_quota(kube, "alpha") == "56"
        after = jobs.submit(kube, job("alpha", "training"))
        workload = jobs.wait_pending(kube, after, EXCEEDS_QUOTA)
        assert "maximum capacity (56)" in condition(workload, "QuotaReserved")["message"]  # type: ignore[index]
        smaller = jobs.submit(kube, job("alpha", "training", pods=7))  # 56 GPUs still fit
        jobs.wait_admitted(kube, smaller)
    finally:
        apply_all(kube, clean.objects)  # back to 12 nodes for whatever runs next
