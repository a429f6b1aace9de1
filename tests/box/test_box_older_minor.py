"""`generate.py box up trial --kubernetes 1.35 --scale 8 --speed 30`: the cluster people run today.

`trial` is tests/corpus/trial.yaml (the trial's cluster: Kubernetes 1.35, Job, JobSet,
TrainJob and RayJob integrations, the stack another team owns as release `monitoring` in
`observability`, H200 and GB200 arm64 training pools, an MI300X `amd.com/gpu` pool, L40S
serving, an interLink provider, overflow and quarantine on), written into a scratch
checkout. `--kubernetes 1.35` renders it for 1.35 and runs the pinned v1.36.5 control plane
at compatibility version 1.35 (box/cluster.py). What the generators choose for that minor
(generators/upstream/kubernetes.py) is then shown by the real controllers on ONE box: no
MutatingAdmissionPolicy API at all; the virtual node registered labelled and closed as its
config says; an inference pod without the quarantine toleration refused naming it; the
gang-placement scene (a Job and a JobSet gang each on one rack, a class-less Job refused at
creation naming the class to set); the day-in-the-life scene (inference spilling to the
virtual node born closed, and back); and a hot GPU's node quarantined by the health
controller reading the box's Prometheus.

`--scale 8` (12 H200, 3 GB200, 1 MI300X and 4 L40S nodes, racks of 2) keeps the box small:
the L40S pool keeps 16 GPUs free at the day's steady state, the gate's close line, and the
H200 racks hold the gang. `--speed 30` for the controllers' durations (the health
controller's 300 s quarantineAfterSeconds becomes 10 s).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.dynamic.exceptions import ForbiddenError, UnprocessibleEntityError

from box import dcgm_fake
from box.kube import Obj, wait_for
from box.scenes.bad_node import Exporter
from tests.support import CORPUS, ROOT
from tests.support.box import UpBox, box_up, run_cli, to_stderr

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

ENV = "trial"
MINOR = "1.35"
SCALE = 8
PROVIDER = "slurm"  # the trial's interLink provider: its node is vk-slurm
TEAM = "pretrain"  # a team (namespace = LocalQueue) whose queue is topology-aware
SERVING = "serving"  # the trial's inference namespace


def _checkout(folder: Path) -> Path:
    """A checkout holding environments/ with trial.yaml (tests/corpus/trial.yaml)."""
    shutil.copytree(ROOT / "environments", folder / "environments")
    shutil.copy(CORPUS / "trial.yaml", folder / "environments" / f"{ENV}.yaml")
    return folder


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _checkout(tmp_path_factory.mktemp("trial"))


@pytest.fixture(scope="module")
def box(checkout: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpBox]:
    with box_up(
        tmp_path_factory.mktemp("box"),
        ENV,
        speed=30,
        scale=SCALE,
        kubernetes=MINOR,
        root=checkout,
        say=to_stderr,
    ) as up:
        yield up


def test_the_apiserver_serves_1_35_without_mutating_admission_policies(box: UpBox) -> None:
    resources = box.kube.raw_get("/apis/admissionregistration.k8s.io/v1")["resources"]
    names = {r["name"] for r in resources}
    assert "validatingadmissionpolicies" in names
    assert "mutatingadmissionpolicies" not in names, sorted(names)
    assert box.state.kubernetes == MINOR


def test_the_virtual_node_is_born_labelled_and_closed(box: UpBox) -> None:
    node = box.kube.get("v1", "Node", f"vk-{PROVIDER}")
    assert node is not None
    assert node["metadata"]["labels"]["trainyard.dev/provider"] == PROVIDER
    assert node["metadata"]["labels"]["virtual-node.interlink/type"] == "virtual-kubelet"
    taints = {(t["key"], t.get("value"), t["effect"]) for t in node["spec"]["taints"]}
    assert ("trainyard.dev/overflow-gate", "closed", "NoSchedule") in taints, taints


def _inference_pod(tolerations: list[dict[str, str]]) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "quarantine-probe", "namespace": SERVING},
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
            "namespace": TEAM,
            "labels": {"kueue.x-k8s.io/queue-name": TEAM},
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
            "namespace": TEAM,
            "labels": {
                "kueue.x-k8s.io/queue-name": TEAM,
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
        "metadata": {"name": "classless", "namespace": TEAM},
        "spec": {"queueName": TEAM, "podSets": [{"name": "main", "count": 1, "template": template}]},
    }
    assert "name none: set priorityClassName: training" in _refusal(workload, box)


def test_gang_placement_with_a_jobset_on_1_35(box: UpBox, checkout: Path) -> None:
    """The scene reports the racks (the nodes' rack labels) of the pods the scheduler bound."""
    done = run_cli(
        "-C", str(checkout), "box", "scene", "gang-placement", ENV, box_dir=box.box_dir, timeout=900
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-3000:]
    assert "pool train-h200:" in out, out
    jobset = re.search(r"JobSet racks \(topology\.trainyard\.dev/rack\): (\S+); fewest that fit: 1  OK", out)
    assert jobset, out  # one rack: a second would be listed, comma-separated
    assert "set priorityClassName: training on every pod template" in out, out


def test_day_in_the_life_on_1_35(box: UpBox, checkout: Path) -> None:
    """Inference spills to vk-slurm (opened by the gate, though nothing but its own config
    closed it at birth) while research's gang borrows the L40S pool, and comes back."""
    done = run_cli(
        "-C", str(checkout), "box", "scene", "day-in-the-life", ENV, box_dir=box.box_dir, timeout=900
    )
    out = done.stdout
    assert f"the gate opened vk-{PROVIDER}" in out and "steady again" in out, out + done.stderr[-3000:]
    assert done.returncode == 0, out + done.stderr[-3000:]


HOT_CELSIUS = 85  # above the trial's gpuTempLimitCelsius (the schema default, 78)
HOT_NODE = "train-h200-005"  # a node of a watched pool (the box names nodes <pool>-<index>)
QUARANTINE_SECONDS = 10 + 120  # quarantineAfterSeconds 300 / speed 30, and the reactions on 2 busy cores


def test_a_hot_gpus_node_is_quarantined(box: UpBox) -> None:
    """One GPU of an H200 node reads above the limit in the box's synthetic dcgm-exporter;
    the health controller (the gate's image, the rendered NodeHealthPolicy) sees it through
    the box's Prometheus and taints the node. Read back: the Node's taints. Last on the box:
    the node is not waited back (the box goes down)."""
    [port] = [p.ports[0] for p in box.state.processes if p.name == dcgm_fake.NAME]
    exporter = Exporter(f"http://127.0.0.1:{port}")

    def node_taints() -> set[tuple[str, str | None, str]]:
        node = box.kube.get("v1", "Node", HOT_NODE) or {}
        return {(t["key"], t.get("value"), t["effect"]) for t in node.get("spec", {}).get("taints") or []}

    assert not any(key == "trainyard.dev/gpu-health" for key, _, _ in node_taints())
    exporter.fault(HOT_NODE, gpuTemperature=HOT_CELSIUS)
    try:
        taint = wait_for(
            lambda: ("trainyard.dev/gpu-health", "gpu-temperature", "NoSchedule") in node_taints(),
            QUARANTINE_SECONDS,
            f"{HOT_NODE} quarantined",
        )
    finally:
        exporter.heal()
    assert taint
    others = [
        n["metadata"]["name"]
        for n in box.kube.list("v1", "Node")
        if n["metadata"]["name"] != HOT_NODE
        and any(t["key"] == "trainyard.dev/gpu-health" for t in n.get("spec", {}).get("taints") or [])
    ]
    assert others == []
