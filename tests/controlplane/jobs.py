"""Suspended GPU Jobs for Kueue, their Workloads, and the job controller's part, by hand.

There is no kube-controller-manager, so no pods ever run. What Kueue reads from a Job is
its status (batch/job integration: `ready + succeeded >= parallelism` is PodsReady,
`active != 0` means pods still exist); the helpers write that status the way the job
controller would when pods start or after a suspension removed them. That lets the rendered
waitForPodsReady(blockAdmission) stay on instead of being configured away.
"""

from __future__ import annotations

import datetime
from typing import Any

from box.kube import Kube, Obj, condition, is_true, wait_for
from box.scenes.workloads import workload_of

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
GPU = "nvidia.com/gpu"
KUEUE_SECONDS = 60  # admission, preemption and status updates each take < 1 s when idle


def gpu_job(
    name: str, namespace: str, queue: str, priority_class: str, pods: int = 8, gpus_per_pod: int = 8
) -> Obj:
    """A suspended Job: `pods` pods of `gpus_per_pod` GPUs, all-or-nothing (one gang)."""
    container: dict[str, Any] = {
        "name": "train",
        "image": "registry.example/trainer:1",
        "resources": {
            "requests": {GPU: str(gpus_per_pod), "cpu": "16", "memory": "128Gi"},
            "limits": {GPU: str(gpus_per_pod)},
        },
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {QUEUE_LABEL: queue, PRIORITY_LABEL: priority_class},
        },
        "spec": {
            "suspend": True,  # Kueue unsuspends it on admission (no webhook here to do it)
            "parallelism": pods,
            "completions": pods,
            "completionMode": "Indexed",
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }


def submit(kube: Kube, job: Obj) -> Obj:
    created = kube.create(job)
    wait_for(
        lambda: workload_of(kube, created), KUEUE_SECONDS, f"a Workload for job {job['metadata']['name']}"
    )
    return created


def reread(kube: Kube, job: Obj) -> Obj:
    meta = job["metadata"]
    current = kube.get("batch/v1", "Job", meta["name"], meta["namespace"])
    assert current is not None, f"job {meta['name']} vanished"
    return current


def wait_admitted(kube: Kube, job: Obj) -> Obj:
    """Until the Workload is Admitted and Kueue unsuspended the Job; returns the Workload."""

    def admitted() -> Obj | None:
        workload = workload_of(kube, job)
        unsuspended = reread(kube, job)["spec"].get("suspend") is False
        return workload if is_true(workload, "Admitted") and unsuspended else None

    return wait_for(admitted, KUEUE_SECONDS, f"job {job['metadata']['name']} admitted")


def wait_pending(kube: Kube, job: Obj, message_part: str) -> Obj:
    """Until Kueue reports the Workload inadmissible with `message_part` in the reason."""

    seen: list[Any] = []

    def pending() -> Obj | None:
        workload = workload_of(kube, job)
        seen[:] = ((workload or {}).get("status") or {}).get("conditions") or []
        reserved = condition(workload, "QuotaReserved")
        if reserved and reserved["status"] == "False" and message_part in reserved.get("message", ""):
            return workload
        return None

    try:
        workload = wait_for(pending, KUEUE_SECONDS, f"job {job['metadata']['name']} pending ({message_part})")
    except AssertionError as err:
        raise AssertionError(f"{err}; workload conditions: {seen}") from None
    assert reread(kube, job)["spec"]["suspend"] is True
    assert not is_true(workload, "Admitted")
    return workload


def pods_started(kube: Kube, job: Obj) -> None:
    """Job controller + kubelets: every pod of the admitted Job is running and ready."""
    pods = job["spec"]["parallelism"]
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = job["metadata"]
    kube.patch_status(
        "batch/v1", "Job", meta["name"], {"startTime": now, "active": pods, "ready": pods}, meta["namespace"]
    )
    wait_for(
        lambda: is_true(workload_of(kube, job), "PodsReady"),
        KUEUE_SECONDS,
        f"PodsReady on the Workload of {meta['name']}",
    )


def pods_removed(kube: Kube, job: Obj) -> None:
    """Job controller after a suspension: the Job's pods are gone."""
    meta = job["metadata"]
    kube.patch_status("batch/v1", "Job", meta["name"], {"active": 0, "ready": 0}, meta["namespace"])


def wait_preempted(kube: Kube, job: Obj) -> Obj:
    """Kueue preempts the admitted `job`: its Workload Evicted (reason Preempted) and
    Preempted, the Job suspended again, and (the job controller's part) its pods removed.
    Returns the victim Workload, for the caller to check where the preemption came from."""

    def evicted() -> Obj | None:
        victim = workload_of(kube, job)
        return victim if is_true(victim, "Evicted") and is_true(victim, "Preempted") else None

    victim: Obj = wait_for(evicted, KUEUE_SECONDS, f"{job['metadata']['name']} evicted by preemption")
    assert condition(victim, "Evicted")["reason"] == "Preempted"  # type: ignore[index]
    wait_for(lambda: reread(kube, job)["spec"]["suspend"] is True, KUEUE_SECONDS, "victim suspended")
    pods_removed(kube, job)
    return victim
