"""Which pods of a training namespace run at a training tier, on the real kube-apiserver
v1.36.5 with staging's rendered objects applied (components/priorities.py "Scope").

Only pods Kueue manages: the training-priority policy once gave every class-less pod there
900000, so a notebook or a Deployment in a team namespace, holding no quota, preempted pods
Kueue had admitted through kube-scheduler. Now a pod outside Kueue gets the lowest tier and
may name no other class, and a Workload naming an inference class is refused when Kueue
would create it (any integration: its pods would be refused only after admission).

The pods here are written as their controllers would write them (no job, ReplicaSet or
Kueue controller runs on this control plane; tests/box/test_priority_scope.py has the real
ones): a Job's pod carries the labels Kueue v0.19.2 writes into the pod template when it
starts the Job (pkg/controller/jobframework/reconciler.go:1756 `kueue.x-k8s.io/podset`, and
:1763 the queue labels of AssignQueueLabelsForPods, on by default since v0.17). Expected
values are literals of environments/staging.yaml and _defaults.yaml: tiers training 900000
(PreemptLowerPriority) and inference-batch 10000 (Never, the lowest); training namespace
foundation; batch/job, jobset and trainjob integrations (no pod-based one).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from box.kube import Kube, Obj, refusal, wait_for
from box.manifests import REPO_ROOT, environment_objects
from tests.controlplane.fixtures import applied

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

NAMESPACE = "foundation"
KUEUE_STARTED = {
    "kueue.x-k8s.io/podset": "main",
    "kueue.x-k8s.io/local-queue-name": "foundation",
    "kueue.x-k8s.io/cluster-queue-name": "foundation",
}


@pytest.fixture(scope="module")
def staging(kube: Kube) -> Iterator[Kube]:
    with applied(kube, environment_objects(REPO_ROOT, "staging")):
        # Each binding is observed on its own a moment after it is applied: wait until both
        # mutating policies answer (a Kueue pod defaulted to training, any other to the low tier).
        def observed() -> bool:
            ours = kube.create(_pod(KUEUE_STARTED), dry_run=True)["spec"].get("priorityClassName")
            theirs = kube.create(_pod({}), dry_run=True)["spec"].get("priorityClassName")
            return bool(ours == "training" and theirs == "inference-batch")

        wait_for(lambda: _quietly(observed), 30, "both training-priority policies observed")
        yield kube


def _quietly(check: Any) -> bool:
    try:
        return bool(check())
    except Exception:  # a validating half seen before its mutating half refuses (403)
        return False


def _pod(labels: dict[str, str], pod_class: str | None = None, owner: str | None = None) -> Obj:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.example/x:1"}]}
    if pod_class is not None:
        spec["priorityClassName"] = pod_class
    metadata: dict[str, Any] = {"name": f"p-{uuid.uuid4().hex[:6]}", "namespace": NAMESPACE, "labels": labels}
    if owner:
        group = "batch/v1" if owner == "Job" else "apps/v1"
        metadata["ownerReferences"] = [
            {
                "apiVersion": group,
                "kind": owner,
                "name": "owner",
                "uid": str(uuid.uuid4()),
                "controller": True,
            }
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _priority(pod: Obj) -> tuple[str, int, str]:
    spec = pod["spec"]
    return spec.get("priorityClassName"), spec.get("priority", 0), spec.get("preemptionPolicy")


LOW = ("inference-batch", 10000, "Never")
TRAINING = ("training", 900000, "PreemptLowerPriority")


def test_a_notebook_pod_runs_at_the_lowest_tier_not_900000(staging: Kube) -> None:
    notebook = _pod({"app": "jupyter", "component": "singleuser-server"})  # a JupyterHub spawner's pod
    assert _priority(staging.create(notebook, dry_run=True)) == LOW


def test_a_deployments_pod_runs_at_the_lowest_tier_not_900000(staging: Kube) -> None:
    """As the ReplicaSet controller creates it: the template's labels, a pod-template-hash, and
    the ReplicaSet as controller."""
    pod = _pod({"app": "tensorboard", "pod-template-hash": "5d8f7c9b6"}, owner="ReplicaSet")
    assert _priority(staging.create(pod, dry_run=True)) == LOW
    statefulset = _pod(
        {"app": "notebook", "statefulset.kubernetes.io/pod-name": "notebook-0"}, owner="StatefulSet"
    )
    assert _priority(staging.create(statefulset, dry_run=True)) == LOW


def test_a_plain_pod_with_a_queue_label_is_not_kueues_without_the_pod_integration(staging: Kube) -> None:
    """staging enables no pod-based integration, so Kueue ignores this pod: no quota, low tier."""
    pod = _pod({"kueue.x-k8s.io/queue-name": "foundation"})
    assert _priority(staging.create(pod, dry_run=True)) == LOW


def test_a_kueue_started_jobs_pod_runs_at_training(staging: Kube) -> None:
    pod = _pod({**KUEUE_STARTED, "batch.kubernetes.io/job-name": "ablation"}, owner="Job")
    assert _priority(staging.create(pod, dry_run=True)) == TRAINING
    critical = staging.create(_pod(KUEUE_STARTED, "training-critical", owner="Job"), dry_run=True)
    assert critical["spec"]["priority"] == 1000000


def test_a_pod_outside_kueue_may_name_no_higher_class(staging: Kube) -> None:
    wait_for(
        lambda: refusal(staging, _pod({"app": "notebook"}, "training")),
        30,
        "the outside-Kueue policy refusing a pod",
    )  # its binding is observed a moment after apply
    for named in ("training", "training-critical", "inference-prod"):
        message = refusal(staging, _pod({"app": "notebook"}, named)) or ""
        assert (
            f"pods that Kueue does not manage run at inference-batch in training namespaces (they hold "
            f"no quota, so a higher class would preempt what Kueue admitted); got {named}: remove "
            "priorityClassName to get inference-batch"
        ) in message, message
    assert refusal(staging, _pod({"app": "notebook"}, "inference-batch")) is None


def test_a_kueue_pod_naming_an_inference_class_is_still_refused(staging: Kube) -> None:
    message = refusal(staging, _pod(KUEUE_STARTED, "inference-prod", owner="Job")) or ""
    assert (
        "pods in training namespaces run at a training tier (training-critical, training); got inference-prod"
    ) in message, message


def _workload(ref: str | None, pod_class: str | None) -> Obj:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "train", "image": "registry.example/trainer:1"}],
    }
    if pod_class:
        spec["priorityClassName"] = pod_class
    workload: Obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": f"jobset-pretrain-{uuid.uuid4().hex[:6]}",
            "namespace": NAMESPACE,
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": "pretrain",
                    "uid": str(uuid.uuid4()),
                    "controller": True,
                }
            ],
        },
        "spec": {
            "queueName": "foundation",
            "podSets": [{"name": "workers", "count": 2, "template": {"spec": spec}}],
        },
    }
    if ref:  # Kueue writes the class's value beside its name (the CRD requires both)
        workload["spec"]["priorityClassRef"] = {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": ref,
        }
        workload["spec"]["priority"] = {"inference-prod": 100000, "training": 900000}[ref]
    return workload


def test_a_workload_naming_an_inference_class_is_refused_before_it_can_hold_quota(staging: Kube) -> None:
    """What Kueue creates for a JobSet (or TrainJob, RayJob) labelled inference-prod, or whose
    pod template names it: refused, so it is never admitted with pods that would be refused."""
    labelled = wait_for(
        lambda: refusal(staging, _workload("inference-prod", None)),
        30,
        "the workload-tier policy refusing a Workload",
    )
    assert (
        "workloads in training namespaces run at a training tier (training-critical, training); "
        "JobSet pretrain names inference-prod"
    ) in labelled, labelled
    templated = refusal(staging, _workload(None, "inference-prod")) or ""
    assert "the pod templates of JobSet pretrain name inference-prod" in templated, templated
    assert refusal(staging, _workload("training", "training")) is None
    assert refusal(staging, _workload(None, None)) is None  # class-less: the Job policy labels batch Jobs
