"""The admission policies treat a TrainJob and a RayJob exactly as a JobSet (the trial's
cluster, tests/corpus/trial.yaml, at Kubernetes 1.35: REQUIRE), on the real kube-apiserver
with the trial's rendered objects applied and the kinds' real CRDs (JobSet v0.12.0, KubeRay
v1.6.2, Kubeflow Trainer v2.2.1: what Kueue v0.19.2 builds against).

A RayJob's pod templates are on the object, so its policy refuses it at creation as the
JobSet's does. A TrainJob has none: Kueue builds its PodSets from the runtime's replicated
jobs (generators/upstream/job_kinds.py), so the TrainJob itself is always admitted and the
Workload Kueue creates for it is what is refused, for the same templates and with the same
fix. The JobSet Trainer then builds carries the runtime's labels, not the TrainJob's (Trainer
v2.2.1 pkg/runtime/core/trainingruntime.go:124-161), so it names no queue and the JobSet
policy's class requirement does not apply to it a second time. Expected verdicts are
literals: below 1.36 a template naming no class, or an inference class, is refused; a
training class is admitted.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from box import jobset
from box.kube import Kube, Obj, refusal, wait_for, wait_true
from box.manifests import environment_objects, install_crds
from tests.controlplane.fixtures import applied
from tests.support import CORPUS
from tests.support.scratch import write_environment
from tests.upstream import job_crds

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

TEAM = "pretrain"  # the trial's training namespace and topology queue
LABELS = {"kueue.x-k8s.io/queue-name": TEAM, "kueue.x-k8s.io/priority-class": "training"}
REQUIRED = "set priorityClassName: training on every pod template"
CLASSES = (None, "inference-prod", "training")
REFUSED = {None: True, "inference-prod": True, "training": False}  # at 1.35 (REQUIRE)


@pytest.fixture(scope="module")
def trial(kube: Kube, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kube]:
    root = tmp_path_factory.mktemp("trial")
    write_environment(root, "trial", (CORPUS / "trial.yaml").read_text(encoding="utf-8"))
    crds = [*jobset.crds(), job_crds.crd(job_crds.TRAINJOB)]
    ray = job_crds.crd(job_crds.RAYJOB)
    api = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    # The session's apiserver is shared: what this module adds, it removes again.
    added = [c["metadata"]["name"] for c in [*crds, ray] if kube.get(*api, c["metadata"]["name"]) is None]
    install_crds(kube, crds)
    # create, not apply: the 1.3 MB schema's server-side-apply field set would push the
    # object past etcd's request limit (KubeRay's install notes say the same of kubectl apply)
    if ray["metadata"]["name"] in added:
        kube.create(ray)
    wait_true(kube, *api, ray["metadata"]["name"], "Established", 60)
    kube.dynamic.resources.invalidate_cache()
    try:
        with applied(kube, environment_objects(root, "trial")):
            yield kube
    finally:
        for name in added:
            kube.delete(*api, name)


def _template(pod_class: str | None) -> Obj:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "registry.example/trainer:1"}],
    }
    if pod_class:
        spec["priorityClassName"] = pod_class
    return {"spec": spec}


def _name() -> str:
    return f"k-{uuid.uuid4().hex[:6]}"


def _object(api_version: str, kind: str, spec: dict[str, Any], labels: dict[str, str] = LABELS) -> Obj:
    """A job of `kind`, of a fresh name in the team's namespace, created suspended (a job
    sent to a Kueue queue waits for admission)."""
    metadata = {"name": _name(), "namespace": TEAM, "labels": dict(labels)}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": {"suspend": True, **spec}}


def _jobset(pod_class: str | None, labels: dict[str, str] = LABELS) -> Obj:
    job = {"parallelism": 2, "completions": 2, "template": _template(pod_class)}
    replicated = [{"name": "node", "replicas": 1, "template": {"spec": job}}]
    return _object("jobset.x-k8s.io/v1alpha2", "JobSet", {"replicatedJobs": replicated}, labels)


def _rayjob(pod_class: str | None) -> Obj:
    head = {"rayStartParams": {}, "template": _template(pod_class)}
    workers = [
        {
            "groupName": "gpu",
            "replicas": 2,
            "minReplicas": 2,
            "maxReplicas": 2,
            "rayStartParams": {},
            "template": _template(pod_class),
        }
    ]
    cluster = {"headGroupSpec": head, "workerGroupSpecs": workers}
    return _object("ray.io/v1", "RayJob", {"entrypoint": "python train.py", "rayClusterSpec": cluster})


def _trainjob() -> Obj:
    spec = {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}}
    return _object("trainer.kubeflow.org/v1alpha1", "TrainJob", spec)


def _workload(pod_class: str | None) -> Obj:
    """The Workload Kueue creates for a TrainJob whose runtime's one replicated job (`node`)
    has this pod template: one PodSet per replicated job, named after it
    (pkg/controller/jobs/trainjob/trainjob_controller.go:217-224, the JobSet's PodSets)."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": _name(),
            "namespace": TEAM,
            "labels": {"kueue.x-k8s.io/priority-class": "training"},
        },
        "spec": {
            "queueName": TEAM,
            "podSets": [{"name": "node", "count": 2, "template": _template(pod_class)}],
        },
    }


@pytest.mark.parametrize("pod_class", CLASSES, ids=["no-class", "inference-class", "training-class"])
def test_a_rayjob_and_a_trainjobs_workload_are_judged_as_the_jobset(
    trial: Kube, pod_class: str | None
) -> None:
    jobset_says = wait_for(
        lambda: (refusal(trial, _jobset(pod_class)) or "") if REFUSED[pod_class] else "admitted",
        30,
        "the trial's JobSet policy in force",
    )
    rayjob_says = refusal(trial, _rayjob(pod_class))
    workload_says = refusal(trial, _workload(pod_class))
    verdicts = {
        "JobSet": jobset_says != "admitted",
        "RayJob": rayjob_says is not None,
        "TrainJob's Workload": workload_says is not None,
    }
    assert verdicts == dict.fromkeys(verdicts, REFUSED[pod_class]), (jobset_says, rayjob_says, workload_says)
    if pod_class is None:
        assert REQUIRED in jobset_says and REQUIRED in (rayjob_says or ""), (jobset_says, rayjob_says)
        assert "set priorityClassName: training" in (workload_says or ""), workload_says
    if pod_class == "inference-prod":
        for said in (jobset_says, rayjob_says, workload_says):
            assert "run at a training tier (training-critical, training)" in (said or ""), said
            assert "inference-prod" in (said or "").split("training);", 1)[-1], said
    # The TrainJob has no pod template: no policy can judge it, whatever its runtime says.
    assert refusal(trial, _trainjob()) is None


def test_the_jobset_trainer_builds_names_no_queue_and_is_not_judged_again(trial: Kube) -> None:
    """Trainer builds the child JobSet with the runtime's labels and an owner reference to the
    TrainJob; Kueue gives it no Workload of its own (its TrainJob is the Kueue-managed ancestor,
    pkg/controller/jobframework/reconciler.go:884-944). Class-less, it is admitted: the class
    was required once, at the TrainJob's Workload."""
    child = _jobset(None, labels={})  # a runtime template without labels
    assert refusal(trial, child) is None
    assert refusal(trial, _jobset(None)) is not None  # the same JobSet naming a queue
