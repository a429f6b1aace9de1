"""Which pods of a training namespace run at a training tier, on the cluster in a box
(`generate.py box up staging`, the box this module shares, tests/box/conftest.py), every actor real: the
ReplicaSet and job controllers (kube-controller-manager v1.36.5) create the pods, the
rendered admission policies in kube-apiserver give them their class, Kueue v0.19.2 (with its
webhooks) admits the Job and writes its labels into the pod template when it starts it, and
kube-scheduler v1.36.5 binds and preempts; KWOK runs the pods.

Before this test, the training-priority policy gave every class-less pod in a training
namespace 900000, so a Deployment or a notebook there, holding no quota, outranked serving
and could preempt pods Kueue had admitted. Now only the pods Kueue starts get the training
tier; any other pod there runs at the lowest tier. Expected values are literals of
environments/staging.yaml and _defaults.yaml: training 900000 PreemptLowerPriority,
inference-prod 100000, inference-batch 10000 Never (the lowest); training namespace
foundation, serving namespace serving-staging, L40S nodes infer-l40s-000..007 of 8 GPUs.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from box.kube import Kube, Obj, is_true, wait_for
from box.scenes.workloads import job_pods, workload_of
from tests.support.box import CONTROLLER_SECONDS, UpBox
from tests.support.recipes import readme_job

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

HOST = "infer-l40s-007"  # one L40S node of staging: 8 GPUs
SCOPE_LABEL = "trainyard.dev/test-priority-scope"
BOX_ENV = "staging"  # the shared staging box (tests/box/conftest.py)


def _deployment(name: str, namespace: str, pod_class: str | None) -> Obj:
    """One replica taking all 8 GPUs of HOST, as a team would run a notebook or a server."""
    spec: dict[str, Any] = {
        "nodeSelector": {"kubernetes.io/hostname": HOST},
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "c",
                "image": "registry.example/notebook:1",
                "resources": {
                    "requests": {"nvidia.com/gpu": "8", "cpu": "1"},
                    "limits": {"nvidia.com/gpu": "8"},
                },
            }
        ],
    }
    if pod_class:
        spec["priorityClassName"] = pod_class
    labels = {"app": name, SCOPE_LABEL: "true"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def _pods(kube: Kube, namespace: str, app: str) -> list[Obj]:
    return [
        p
        for p in kube.list("v1", "Pod", namespace, label_selector=f"app={app}")
        if not p["metadata"].get("deletionTimestamp")
    ]


def _running(kube: Kube, namespace: str, app: str) -> Obj | None:
    for pod in _pods(kube, namespace, app):
        if pod["spec"].get("nodeName") and (pod.get("status") or {}).get("phase") == "Running":
            return pod
    return None


def test_a_deployment_in_a_team_namespace_runs_low_and_serving_preempts_it(box: UpBox) -> None:
    """The ReplicaSet controller's pod of a class-less Deployment in foundation gets
    inference-batch (10000, Never), not 900000; when a serving pod of inference-prod needs its
    GPUs the real scheduler preempts it (at 900000 the serving pod would stay Pending)."""
    kube = box.kube
    name = f"notebook-{uuid.uuid4().hex[:6]}"
    serving = f"chat-{uuid.uuid4().hex[:6]}"
    kube.create(_deployment(name, "foundation", None))
    try:
        pod = wait_for(
            lambda: _running(kube, "foundation", name),
            CONTROLLER_SECONDS,
            f"the scheduler binding {name} on {HOST} and KWOK running it",
        )
        spec = pod["spec"]
        assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == (
            "inference-batch",
            10000,
            "Never",
        )
        assert spec["nodeName"] == HOST
        victim = pod["metadata"]["uid"]
        kube.create(_deployment(serving, "serving-staging", "inference-prod"))
        winner = wait_for(
            lambda: _running(kube, "serving-staging", serving),
            CONTROLLER_SECONDS,
            f"the scheduler preempting {name} for {serving}",
        )
        assert winner["spec"]["priority"] == 100000 and winner["spec"]["nodeName"] == HOST
        survivors = [
            p
            for p in kube.list("v1", "Pod", "foundation", label_selector=f"app={name}")
            if p["metadata"]["uid"] == victim and not p["metadata"].get("deletionTimestamp")
        ]
        assert not survivors, "the notebook's pod was not preempted"
        # The ReplicaSet's replacement waits: nothing below it may be preempted (Never).
        for replacement in _pods(kube, "foundation", name):
            assert replacement["spec"].get("nodeName") in (None, ""), replacement["spec"]
    finally:
        kube.delete("apps/v1", "Deployment", name, "foundation")
        kube.delete("apps/v1", "Deployment", serving, "serving-staging")


def test_a_classless_kueue_job_ranks_and_runs_as_training(box: UpBox) -> None:
    """The README's Job with neither the priority-class label nor a pod class: its Workload
    ranks as training (900000, class training), and the pods the job controller creates once
    Kueue started it carry Kueue's podset label and run at training 900000."""
    job = readme_job("scope")
    del job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"]
    del job["spec"]["template"]["spec"]["priorityClassName"]
    created = box.kube.create(job)
    try:

        def admitted() -> Obj | None:
            workload = workload_of(box.kube, created)
            return workload if is_true(workload, "Admitted") else None

        workload = wait_for(admitted, CONTROLLER_SECONDS, "Kueue admitting the class-less Job")
        assert workload["spec"]["priority"] == 900000
        assert workload["spec"]["priorityClassRef"]["name"] == "training"

        def created_pods() -> list[Obj] | None:
            pods = job_pods(box.kube, created)
            return pods if len(pods) == 4 else None

        pods = wait_for(created_pods, CONTROLLER_SECONDS, "the job controller creating the 4 pods")
        for pod in pods:
            assert pod["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"  # Kueue wrote it
            spec = pod["spec"]
            assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == (
                "training",
                900000,
                "PreemptLowerPriority",
            )
    finally:
        box.kube.delete("batch/v1", "Job", created["metadata"]["name"], "foundation")
