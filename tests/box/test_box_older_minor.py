"""`generate.py box up trial --kubernetes 1.35 --speed 30`: the cluster people run today.

`trial` is staging with its overflow provider an interLink one (node-cli's mock cannot come up
closed below 1.36), written to a scratch checkout; `--kubernetes 1.35` renders it for 1.35 and
runs the pinned v1.36.5 control plane at compatibility version 1.35 (box/cluster.py). What
the generators choose for that minor (generators/upstream/kubernetes.py) is then shown by the
real controllers: no MutatingAdmissionPolicy API at all, the virtual node registered labelled
and closed as its config says, an inference pod without the quarantine toleration refused
naming it, and the gang-placement scene (a Job and a JobSet gang each on one rack, a
class-less Job refused at creation naming the class to set), and the day-in-the-life scene
(inference spilling to the virtual node born closed, and back). Full size (the scene needs
staging's inference pool whole; --scale would leave it no free GPUs), at --speed 30 for the
scene's controller durations.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.dynamic.exceptions import ForbiddenError, UnprocessibleEntityError

from box.kube import Obj
from tests.support import ROOT
from tests.support.box import UpBox, box_up, run_cli, to_stderr

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

ENV = "trial"
MINOR = "1.35"
MOCK = "      type: mock\n"
MOCK_CONFIG = 'config: {cpu: "64", memory: 512Gi, pods: "110"}'
INTERLINK_CONFIG = 'config: {InterlinkURL: "https://interlink.example.org", InterlinkPort: "443"}'


def _checkout(folder: Path) -> Path:
    """A checkout holding environments/ with trial.yaml (staging, interLink provider)."""
    shutil.copytree(ROOT / "environments", folder / "environments")
    staging = (ROOT / "environments" / "staging.yaml").read_text()
    assert MOCK in staging and MOCK_CONFIG in staging
    trial = staging.replace("name: staging", f"name: {ENV}", 1).replace(MOCK, "      type: interlink\n")
    (folder / "environments" / f"{ENV}.yaml").write_text(trial.replace(MOCK_CONFIG, INTERLINK_CONFIG))
    return folder


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _checkout(tmp_path_factory.mktemp("trial"))


@pytest.fixture(scope="module")
def box(checkout: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpBox]:
    with box_up(
        tmp_path_factory.mktemp("box"), ENV, speed=30, kubernetes=MINOR, root=checkout, say=to_stderr
    ) as up:
        yield up


def test_the_apiserver_serves_1_35_without_mutating_admission_policies(box: UpBox) -> None:
    resources = box.kube.raw_get("/apis/admissionregistration.k8s.io/v1")["resources"]
    names = {r["name"] for r in resources}
    assert "validatingadmissionpolicies" in names
    assert "mutatingadmissionpolicies" not in names, sorted(names)
    assert box.state.kubernetes == MINOR


def test_the_virtual_node_is_born_labelled_and_closed(box: UpBox) -> None:
    node = box.kube.get("v1", "Node", "vk-mock")
    assert node is not None
    assert node["metadata"]["labels"]["trainyard.dev/provider"] == "mock"
    assert node["metadata"]["labels"]["virtual-node.interlink/type"] == "virtual-kubelet"
    taints = {(t["key"], t.get("value"), t["effect"]) for t in node["spec"]["taints"]}
    assert ("trainyard.dev/overflow-gate", "closed", "NoSchedule") in taints, taints


def _inference_pod(tolerations: list[dict[str, str]]) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "quarantine-probe", "namespace": "serving-staging"},
        "spec": {
            "priorityClassName": "inference-prod",
            "tolerations": tolerations,
            "containers": [{"name": "main", "image": "registry.example/serve:1"}],
        },
    }


def test_an_inference_pod_without_the_quarantine_toleration_is_refused_naming_it(box: UpBox) -> None:
    with pytest.raises((ForbiddenError, UnprocessibleEntityError)) as refused:
        box.kube.create(_inference_pod([]), dry_run=True)
    assert "add the toleration {key: trainyard.dev/gpu-health, operator: Exists, effect: NoSchedule}" in str(
        refused.value.body
    )
    toleration = {"key": "trainyard.dev/gpu-health", "operator": "Exists", "effect": "NoSchedule"}
    assert (
        box.kube.create(_inference_pod([toleration]), dry_run=True)["metadata"]["name"] == "quarantine-probe"
    )


def test_a_gang_without_topology_is_admitted_with_a_warning_naming_the_annotation(box: UpBox) -> None:
    """Below 1.36 the default topology is a warning (validationActions [Warn]): `kubectl`
    prints it, and the Job is still created."""
    from tools.toolchain import tool_path

    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "warn-probe",
            "namespace": "foundation",
            "labels": {"kueue.x-k8s.io/queue-name": "foundation"},
        },
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "priorityClassName": "training",
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "registry.example/trainer:1"}],
                }
            },
        },
    }
    done = subprocess.run(
        [
            str(tool_path("kubectl")),
            f"--kubeconfig={box.kubeconfig}",
            "create",
            "--dry-run=server",
            "-f",
            "-",
        ],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "job.batch/warn-probe created (server dry run)" in done.stdout
    assert done.stderr.startswith("Warning: "), done.stderr
    assert (
        "Job warn-probe names no topology, so Kueue places it host by host: add the annotation "
        "kueue.x-k8s.io/podset-preferred-topology: topology.trainyard.dev/rack to its pod templates"
    ) in done.stderr, done.stderr


def _refusal(obj: Obj, box: UpBox) -> str:
    with pytest.raises((ForbiddenError, UnprocessibleEntityError)) as refused:
        box.kube.create(obj, dry_run=True)
    return str(refused.value.body)


def test_a_classless_jobset_and_workload_are_refused_naming_the_class(box: UpBox) -> None:
    """Finding 2: below 1.36 a class-less training job held quota while none of its pods could
    exist. The JobSet is refused at creation, and so is a Workload (what Kueue creates for a
    TrainJob, whose class lives in its runtime)."""
    container = {"name": "main", "image": "registry.example/trainer:1"}
    template = {"spec": {"restartPolicy": "Never", "containers": [container]}}
    jobset: Obj = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "classless",
            "namespace": "foundation",
            "labels": {
                "kueue.x-k8s.io/queue-name": "foundation",
                "kueue.x-k8s.io/priority-class": "training",
            },
        },
        "spec": {
            "replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {"template": template}}}]
        },
    }
    assert "set priorityClassName: training on every pod template" in _refusal(jobset, box)
    workload: Obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "classless", "namespace": "foundation"},
        "spec": {"queueName": "foundation", "podSets": [{"name": "main", "count": 1, "template": template}]},
    }
    assert "name none: set priorityClassName: training" in _refusal(workload, box)


def test_gang_placement_with_a_jobset_on_1_35(box: UpBox, checkout: Path) -> None:
    done = run_cli(
        "-C", str(checkout), "box", "scene", "gang-placement", ENV, box_dir=box.box_dir, timeout=900
    )
    out = done.stdout
    assert "JobSet racks" in out and "refused:" in out, out + done.stderr[-3000:]
    assert "set priorityClassName: training on every pod template" in out, out
    assert done.returncode == 0, out + done.stderr[-3000:]


def test_day_in_the_life_on_1_35(box: UpBox, checkout: Path) -> None:
    """Inference spills to vk-mock (opened by the gate, though nothing but its own config
    closed it at birth) while a training gang borrows its pool, and comes back."""
    done = run_cli(
        "-C", str(checkout), "box", "scene", "day-in-the-life", ENV, box_dir=box.box_dir, timeout=900
    )
    out = done.stdout
    assert "the gate opened vk-mock" in out and "steady again" in out, out + done.stderr[-3000:]
    assert done.returncode == 0, out + done.stderr[-3000:]
