"""`generate.py box up staging` on this machine, driven through the CLI as a user would.

Every controller that acts here is the real one at its pinned version: kube-apiserver,
kube-controller-manager (job, node lifecycle, ReplicaSet and namespace controllers),
kube-scheduler v1.36.5, KWOK v0.8.0 (the kubelets: node status, pods Running, Job pods
Succeeded through its default pod-complete Stage) and Kueue v0.19.2 with its chart's
webhooks. The tests write Jobs, as a user does, and assert what those controllers did with
them: a Job suspended by Kueue's webhook, a Workload admitted with a topology assignment,
pods placed on the pool's KWOK nodes by the scheduler, the Job completed by the job
controller. (`box down`: tests/box/test_box_down.py.)
"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml

from box import monitoring
from box.kube import Obj, condition, is_true, wait_for
from box.scenes import gang_placement
from box.scenes.workloads import job_pods, workload_of
from box.state import State
from generators.model.load import load
from tests.support import ROOT
from tests.support.box import CONTROLLER_SECONDS, UpBox, run_cli
from tests.support.recipes import readme_job

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

BOX_ENV = ENV = "staging"
KUEUE_API = "kueue.x-k8s.io/v1beta2"


def kubectl(box: UpBox, *args: str) -> str:
    from tools.toolchain import tool_path

    done = subprocess.run(
        [str(tool_path("kubectl")), f"--kubeconfig={box.kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_kubectl_lists_every_rendered_cluster_queue_active(box: UpBox) -> None:
    expected = sorted(
        p.stem.removeprefix("clusterqueue-")
        for p in (ROOT / "rendered" / ENV / "kueue").glob("clusterqueue-*.yaml")
    )
    listed = yaml.safe_load(kubectl(box, "get", "clusterqueues", "-o", "yaml"))["items"]
    assert sorted(q["metadata"]["name"] for q in listed) == expected
    for queue in listed:
        assert is_true(queue, "Active"), (queue["metadata"]["name"], queue.get("status"))


def test_prometheus_scrapes_kube_state_metrics_with_the_rendered_label_allowlist(box: UpBox) -> None:
    """The chart's kube-state-metrics (pinned build, the chart's arguments with the rendered
    metricLabelsAllowlist) reports each node with its pool label; Prometheus scraped it and
    evaluates the rendered alert rules."""
    state = State.load(box.folder)
    assert state is not None and state.prometheus
    env = load(ROOT, ENV)
    for pool in env.pools:
        selector = f'kube_node_labels{{label_trainyard_dev_pool="{pool.name}"}}'
        series = monitoring.query(state.prometheus, selector)
        assert len(series) == pool.nodes, (pool.name, len(series))
    with urllib.request.urlopen(f"{state.prometheus}/api/v1/rules", timeout=10) as response:
        groups = json.load(response)["data"]["groups"]
    rendered = yaml.safe_load(
        (
            ROOT
            / "rendered"
            / ENV
            / "monitoring"
            / "monitoring"
            / "configmap-trainyard-alerts-rules-file.yaml"
        ).read_text(encoding="utf-8")
    )
    expected = yaml.safe_load(next(iter(rendered["data"].values())))["groups"]
    assert sorted(g["name"] for g in groups) == sorted(g["name"] for g in expected)
    assert all(g["rules"] and all(r["health"] != "err" for r in g["rules"]) for g in groups)


def gate_metrics(state: State, name: str, prefix: str = "trainyard_gate_") -> dict[str, float]:
    [process] = [p for p in state.processes if p.name == name]
    with urllib.request.urlopen(f"http://127.0.0.1:{process.ports[0]}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines() if line.startswith(prefix)
    }


def test_gate_counts_free_gpus_from_prometheus_and_holds_the_virtual_node_closed(box: UpBox) -> None:
    """The rendered gate (its TaintPolicy and query, as ServiceAccount overflow-gate) asks the
    box's Prometheus, which scraped kube-state-metrics: every L40S GPU is free (nothing runs
    there), above closeWhenFreeGpusAtLeast, so the gate keeps the virtual node vk-mock, which
    the rendered admission policy labelled and closed, closed. (It failed in 2 of 4 runs while
    the policy closed a node only at creation: `box up` registers vk-mock right after the apply,
    before the new policy acts, and the gate adopted "open" for it.)"""
    state = State.load(box.folder)
    assert state is not None
    env = load(ROOT, ENV)
    l40s = env.pool("infer-l40s")

    def counted() -> dict[str, float] | None:
        metrics = gate_metrics(state, "overflow-gate")
        free = metrics.get("trainyard_gate_free_gpus")
        matched = metrics.get('trainyard_gate_matched_nodes{gate="mock"}')
        # a pass queries first and matches nodes after: wait for both of the same state
        return metrics if free == l40s.nodes * l40s.gpus_per_node and matched == 1 else None

    metrics = wait_for(counted, CONTROLLER_SECONDS, "the gate counting every L40S GPU free, vk-mock matched")
    [gate] = [p for p in state.processes if p.name == "overflow-gate"]
    told = [
        line
        for line in Path(gate.log).read_text(encoding="utf-8").splitlines()
        if "initial state" in line or "transition" in line or "patched" in line
    ]
    assert metrics['trainyard_gate_closed{gate="mock"}'] == 1, (metrics, told)
    node = box.kube.get("v1", "Node", "vk-mock")
    assert node is not None and node["metadata"]["labels"]["trainyard.dev/provider"] == "mock"
    closed = {"key": "trainyard.dev/overflow-gate", "value": "closed", "effect": "NoSchedule"}
    assert closed in node["spec"]["taints"]
    assert gate_metrics(state, "gpu-health", "trainyard_health_")  # the health controller runs too


def test_v1beta1_reads_are_converted_by_kueues_conversion_webhook(box: UpBox) -> None:
    """Stored as v1beta2; a v1beta1 read goes through the chart's conversion webhook, which
    the box points at the Kueue process: it answers, or the apiserver would fail the read."""
    queue = box.kube.get("kueue.x-k8s.io/v1beta1", "ClusterQueue", "foundation")
    assert queue is not None and queue["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert queue["spec"]["resourceGroups"], queue["spec"]


def test_one_ready_kwok_node_per_node_of_the_spec(box: UpBox) -> None:
    env = load(ROOT, ENV)
    nodes = box.kube.list("v1", "Node", label_selector="trainyard.dev/box-node=true")
    for pool in env.pools:
        mine = [n for n in nodes if n["metadata"]["labels"].get("trainyard.dev/pool") == pool.name]
        assert len(mine) == pool.nodes, pool.name
        for node in mine:
            assert is_true(node, "Ready"), node["metadata"]["name"]  # KWOK reports it
            allocatable = node["status"]["allocatable"]
            assert allocatable["nvidia.com/gpu"] == str(pool.gpus_per_node)
            assert allocatable["cpu"] == str(int(pool.per_node["cpu"])), allocatable  # not KWOK's 1k
            # the node lifecycle controller lifted the taint the apiserver put on the new node
            taints = node["spec"].get("taints") or []
            assert not [t for t in taints if t["key"].startswith("node.kubernetes.io/")]


def test_unsuspended_job_is_suspended_by_kueues_webhook(box: UpBox) -> None:
    job = readme_job("webhook")
    job["spec"]["suspend"] = False
    created = box.kube.create(job)
    try:
        assert created["spec"]["suspend"] is True  # Kueue's mutating webhook, not the test
    finally:
        box.kube.delete("batch/v1", "Job", created["metadata"]["name"], "foundation")


def test_readme_job_admitted_placed_by_the_scheduler_and_completed(box: UpBox) -> None:
    job = box.kube.create(readme_job("ablation"))
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    try:
        _readme_job_runs(box, job, name, namespace)
    finally:  # the Job, its pods and Workload (garbage-collected): the box as this module found it
        box.kube.delete("batch/v1", "Job", name, namespace)


def _readme_job_runs(box: UpBox, job: Obj, name: str, namespace: str) -> None:
    """Admitted by Kueue with a topology assignment, bound, completed, finished."""

    def admitted() -> Obj | None:
        workload = workload_of(box.kube, job)
        return workload if is_true(workload, "Admitted") else None

    workload = wait_for(admitted, CONTROLLER_SECONDS, f"Kueue admitting {name}")
    [assignment] = workload["status"]["admission"]["podSetAssignments"]
    assert assignment["flavors"]["nvidia.com/gpu"] == "train-h100"
    assert assignment.get("topologyAssignment"), assignment  # TAS placed the gang

    def placed() -> list[Obj] | None:
        pods = job_pods(box.kube, job)
        return pods if len(pods) == 4 and all(p["spec"].get("nodeName") for p in pods) else None

    pods = wait_for(placed, CONTROLLER_SECONDS, f"the scheduler binding the 4 pods of {name}")
    nodes = {p["spec"]["nodeName"] for p in pods}
    assert len(nodes) == 4, nodes  # 8 GPUs a pod, 8 a node: one pod per node
    for node_name in nodes:
        node = box.kube.get("v1", "Node", node_name)
        assert node is not None and node["metadata"]["labels"]["trainyard.dev/pool"] == "train-h100"
    for pod in pods:  # the training-priority policy set the class the README calls optional
        assert pod["spec"]["priorityClassName"] == "training"

    def completed() -> Obj | None:
        current = box.kube.get("batch/v1", "Job", name, namespace)
        return current if is_true(current, "Complete") else None

    done = wait_for(completed, CONTROLLER_SECONDS, f"the job controller completing {name}")
    assert done["status"]["succeeded"] == 4
    finished = wait_for(
        lambda: condition(workload_of(box.kube, job), "Finished"),
        CONTROLLER_SECONDS,
        f"Kueue finishing the Workload of {name}",
    )
    assert finished["status"] == "True"


def test_job_with_no_class_ranks_as_training(box: UpBox) -> None:
    """A Job naming no class was a priority-0 Workload (Kueue's
    jobframework reconciler takes the WorkloadPriorityClass label, else the pod template's
    class, else 0). The rendered trainyard-training-workload-priority policy labels it with
    the default training tier; the real apiserver applies it, the real Kueue reads it."""
    job = readme_job("classless")
    del job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"]
    del job["spec"]["template"]["spec"]["priorityClassName"]
    created = box.kube.create(job)
    try:
        workload = wait_for(lambda: workload_of(box.kube, created), CONTROLLER_SECONDS, "its Workload")
        assert workload["spec"].get("priority", 0) == 900000  # staging's tier `training`
        assert workload["spec"].get("priorityClassRef", {}).get("name") == "training"
    finally:
        box.kube.delete("batch/v1", "Job", created["metadata"]["name"], "foundation")


def test_scene_gang_placement_runs_from_the_cli(box: UpBox) -> None:
    """`generate.py box scene gang-placement staging` on the running box: the real Kueue's
    topology assignment, read back through the scheduler's placement, printed per line."""
    done = run_cli("box", "scene", "gang-placement", ENV, box_dir=box.box_dir, timeout=600)
    assert "landed on train-h100-" in done.stdout, done.stdout + done.stderr[-3000:]
    # The default topology and the default training class are rendered policies: neither promise is broken.
    assert not re.search(r"SCATTERED|RANKS BELOW", done.stdout), done.stdout
    assert done.returncode == 0, done.stdout
    gang = re.search(r"landed on (.*)$", done.stdout, re.MULTILINE)
    assert gang is not None and len(gang.group(1).split(", ")) == 4  # a rack's worth: 4 hosts
    # staging enables JobSet: the same gang as a JobSet, through JobSet's real controller, got
    # the default topology too (before, only batch/jobs did, and it scattered).
    assert re.search(r"^JobSet racks \(.*\): [^,]*; fewest that fit: 1  OK$", done.stdout, re.MULTILINE), (
        done.stdout
    )
    # The scene removed what it created (the garbage collector takes the Jobs' pods after).
    wait_for(
        lambda: (
            not box.kube.list("v1", "Pod", "foundation", label_selector="trainyard.dev/box-scene")
            and not box.kube.list("batch/v1", "Job", "foundation", label_selector="trainyard.dev/box-scene")
        ),
        CONTROLLER_SECONDS,
        "the scene's objects gone",
    )


def test_gang_lands_on_as_few_racks_as_fit(box: UpBox) -> None:
    """A Job without a topology annotation was implied TAS at the host
    level (kueue pkg/cache/scheduler/tas_flavor_snapshot.go): with 3 hosts of rack-0 busy,
    a 4-host gang took rack-0's last host and 3 of rack-1. The rendered default-topology
    policy asks for the queue's top level as a preference; the real Kueue places it."""
    result = gang_placement.gang_placement(box.kube, load(ROOT, ENV))
    assert len(result.gang_hosts) == 4
    assert len(result.gang_racks) == result.fewest_racks, result.lines()
