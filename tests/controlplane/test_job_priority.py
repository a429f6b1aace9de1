"""Training Jobs and their priority on the real kube-apiserver, staging's rendered objects
applied: a Job naming no class is labelled with the default training tier's
WorkloadPriorityClass (Kueue would make it a priority-0 Workload), and a Job naming an
inference class, as its label or as its pods' class, is refused when created (the pod
policy alone refused only its pods, after Kueue had admitted the Job and given it quota).
Expected values are literals of environments/staging.yaml (tiers training-critical,
training; inference-prod; training namespace foundation).
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
LABEL = "kueue.x-k8s.io/priority-class"


@pytest.fixture(scope="module")
def staging(kube: Kube) -> Iterator[Kube]:
    with applied(kube, environment_objects(REPO_ROOT, "staging")):
        yield kube


def _job(labels: dict[str, str], pod_class: str | None = None) -> Obj:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "train", "image": "registry.example/trainer:1"}],
    }
    if pod_class is not None:
        spec["priorityClassName"] = pod_class
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"j-{uuid.uuid4().hex[:6]}",
            "namespace": NAMESPACE,
            "labels": {"kueue.x-k8s.io/queue-name": NAMESPACE, **labels},
        },
        "spec": {"suspend": True, "template": {"spec": spec}},
    }


def test_a_classless_job_gets_the_default_training_tier(staging: Kube) -> None:
    def labelled() -> str | None:  # the binding is observed a moment after it is applied
        return staging.create(_job({}), dry_run=True)["metadata"]["labels"].get(LABEL)  # type: ignore[no-any-return]

    assert wait_for(labelled, 30, "the workload-priority policy labelling a class-less Job") == "training"
    # A Job naming its pods' class keeps it: the label would override that class in Kueue.
    critical = staging.create(_job({}, pod_class="training-critical"), dry_run=True)
    assert LABEL not in critical["metadata"]["labels"]


def test_a_job_naming_an_inference_class_is_refused_at_creation(staging: Kube) -> None:
    label = _job({LABEL: "inference-prod"})
    message = wait_for(lambda: refusal(staging, label), 30, "the job-priority policy refusing a Job")
    assert (
        "jobs in training namespaces run at a training tier (training-critical, training); the label "
        "kueue.x-k8s.io/priority-class names inference-prod"
    ) in message, message
    pod_class = refusal(staging, _job({}, pod_class="inference-prod")) or ""
    assert "the pod template names inference-prod" in pod_class, pod_class
    assert refusal(staging, _job({LABEL: "training-critical"}, pod_class="training-critical")) is None
