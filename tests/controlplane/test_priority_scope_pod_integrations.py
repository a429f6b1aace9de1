"""The priority scope when a pod-based Kueue integration is on, on the real kube-apiserver
v1.36.5: staging's model with `deployment` added to `kueue.integrations`, rendered by the
real generators and applied (components/priorities.py "Scope").

With the `deployment` integration Kueue manages a Deployment that names a queue: its webhook
writes `kueue.x-k8s.io/queue-name` and `kueue.x-k8s.io/managed: "true"` into the pod template
(kubernetes-sigs/kueue v0.19.2 pkg/controller/jobs/deployment/deployment_webhook.go:98-101),
and Kueue's pod webhook gates each pod, after the admission policies ran
(pkg/kubeapiserver/options/plugins.go, v1.36: MutatingAdmissionPolicy before
MutatingAdmissionWebhook). So such a pod is Kueue's, inside quota, and runs at training; a
Deployment without a queue is still outside Kueue and runs at the lowest tier. Pods are
written as the ReplicaSet controller would create them (none runs here). Expected values are
literals of environments/_defaults.yaml: training 900000, inference-batch 10000.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from box.kube import Kube, Obj, wait_for
from box.manifests import REPO_ROOT
from generators.model.load import load
from generators.pipeline.render import objects as objects_of
from generators.pipeline.render import render_tree
from tests.controlplane.fixtures import applied

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

NAMESPACE = "foundation"


def _pod(labels: dict[str, str]) -> Obj:
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "server-5d8f7c9b6",
        "uid": str(uuid.uuid4()),
        "controller": True,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"p-{uuid.uuid4().hex[:6]}",
            "namespace": NAMESPACE,
            "labels": {"app": "server", "pod-template-hash": "5d8f7c9b6", **labels},
            "ownerReferences": [owner],
        },
        "spec": {"containers": [{"name": "c", "image": "registry.example/x:1"}]},
    }


QUEUED = {"kueue.x-k8s.io/queue-name": "foundation", "kueue.x-k8s.io/managed": "true"}


def _class(kube: Kube, labels: dict[str, str]) -> tuple[Any, Any]:
    spec = kube.create(_pod(labels), dry_run=True)["spec"]
    return spec.get("priorityClassName"), spec.get("priority", 0)


@pytest.fixture(scope="module")
def with_deployments(kube: Kube) -> Iterator[Kube]:
    env = load(REPO_ROOT, "staging")
    kueue = dataclasses.replace(env.kueue, integrations=(*env.kueue.integrations, "deployment"))
    objects = objects_of(render_tree(dataclasses.replace(env, kueue=kueue)))
    with applied(kube, objects):

        def observed() -> bool:  # each binding is observed a moment after it is applied
            try:
                ours, theirs = _class(kube, QUEUED)[0], _class(kube, {})[0]
                return bool(ours == "training" and theirs == "inference-batch")
            except Exception:  # a validating half seen before its mutating half refuses (403)
                return False

        wait_for(observed, 30, "both training-priority policies observed")
        yield kube


def test_a_queued_deployments_pod_is_kueues_and_runs_at_training(with_deployments: Kube) -> None:
    assert _class(with_deployments, QUEUED) == ("training", 900000)
    assert _class(with_deployments, {"kueue.x-k8s.io/queue-name": "foundation"}) == ("training", 900000)


def test_a_deployment_without_a_queue_is_still_outside_kueue(with_deployments: Kube) -> None:
    assert _class(with_deployments, {}) == ("inference-batch", 10000)
