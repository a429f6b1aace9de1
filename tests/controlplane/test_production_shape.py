"""The shipped environments' rendered Kueue objects, read by the real Kueue, on Nodes shaped
like the environment's pools.

Per shape, the rendered objects of a SHIPPED environment are applied unchanged and the real
Kueue v0.19.2 runs with the rendered configuration. Nodes are created from the model's pools
(pool labels, topology labels, taints and per-node capacity from the spec):
- staging: every node of every pool (32 H100 in racks of 4, 8 L40S), so quotas and node
  capacity agree and preemption can be shown;
- prod: the same labels, taints, topology levels and per-node capacity, but 8 nodes per H100
  pool (2 IB blocks x 2 racks x 2 hosts) and 4 L40S nodes.

What it shows (issue: "behaviour at production shape"): the README's training Job, copied
from the README, is admitted onto an H100 flavor with a topology assignment, with and without
rdma/ib, and with a required-topology annotation; the same team's `-flex` queue borrows the
L40S pool; a training-critical Job preempts a training Job of the same team (staging); a pod
of a Kueue-started job in a training namespace ends with a training priority and one naming
an inference class there is refused; an inference pod without a class runs at 0.
"""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from box.daemon import Daemon
from box.kube import Kube, Obj, refusal, wait_for, wait_true
from box.kueue import rendered_configuration, start_kueue
from box.manifests import REPO_ROOT, environment_files, environment_objects
from generators.model.environment import Environment
from generators.model.load import load
from generators.model.types import Pool
from tests.controlplane import jobs
from tests.controlplane.fixtures import applied, require_tools
from tests.controlplane.harness import ControlPlane
from tests.controlplane.overflow_scene import make_ready_node

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

KUEUE_API = "kueue.x-k8s.io/v1beta2"
HOSTNAME = "kubernetes.io/hostname"
RECIPE_MARKER = "<!-- recipe:training-job -->"
SCALED_NODES = 8  # prod's H100 pools in the test: 2 IB blocks x 2 racks x 2 hosts


def readme_job() -> Obj:
    """The training Job of README.md, exactly as written there (the block after the marker)."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert RECIPE_MARKER in text, "README.md lost its training-job recipe marker"
    block = re.search(r"```yaml\n(.*?)```", text[text.index(RECIPE_MARKER) :], re.DOTALL)
    assert block is not None, "no ```yaml block after the recipe marker"
    job: Obj = yaml.safe_load(block.group(1))
    return job


def fan_out(nodes: int, levels: int) -> list[int]:
    """Domain sizes (in nodes) of each level above the host, coarsest first: racks of 4 hosts
    when there are enough nodes (staging), else 2, and 2 racks per block above that."""
    per_rack = 4 if nodes >= 16 else 2
    return [per_rack * 2 ** (levels - 1 - k) for k in range(levels)]


def pool_nodes(pool: Pool, count: int) -> list[Obj]:
    """`count` Node objects of `pool`, with its labels, taints and one topology domain each."""
    above_host = [level for level in pool.topology_levels if level != HOSTNAME]
    sizes = fan_out(count, len(above_host))
    nodes = []
    for i in range(count):
        name = f"{pool.name}-{i:03d}"
        labels = {**pool.node_labels, HOSTNAME: name}
        for level, size in zip(above_host, sizes, strict=True):
            labels[level] = f"{level.rsplit('/', 1)[-1]}-{i // size}"
        taints = [
            {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})} for t in pool.taints
        ]
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": {"taints": taints},
            }
        )
    return nodes


def capacity(pool: Pool) -> dict[str, str]:
    amounts = {
        name: str(int(value)) if value.denominator == 1 else str(float(value))
        for name, value in pool.per_node.items()
    }
    return {**amounts, "pods": "110"}


def make_nodes(kube: Kube, env: Environment, scaled: bool) -> list[str]:
    """Create and ready every node of the shape; returns their names."""
    names = []
    for pool in env.pools:
        count = min(pool.nodes, SCALED_NODES if pool.topology_levels else 4) if scaled else pool.nodes
        for node in pool_nodes(pool, count):
            meta = node["metadata"]
            make_ready_node(
                kube, meta["name"], meta["labels"], node["spec"]["taints"], pool.gpus_per_node, capacity(pool)
            )
            names.append(meta["name"])
    return names


@dataclass
class Shape:
    name: str
    env: Environment
    kube: Kube
    objects: list[Obj]
    kueue: Daemon
    nodes: list[str]

    def queue(self, team: str) -> Obj:
        queue = self.kube.get(KUEUE_API, "ClusterQueue", team)
        assert queue is not None
        return queue

    def topology_flavors(self) -> set[str]:
        return {p.name for p in self.env.pools if p.topology_levels}

    def training_teams(self) -> set[str]:
        return {t.name for t in self.env.teams if set(t.shares) & self.topology_flavors()}


@pytest.fixture(scope="module", params=["staging", "prod"])
def shape(
    request: pytest.FixtureRequest,
    kube: Kube,
    control_plane: ControlPlane,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Shape]:
    name: str = request.param
    binary = require_tools("kueue")["kueue"]
    env = load(REPO_ROOT, name)
    with applied(kube, environment_objects(REPO_ROOT, name)) as objects:
        nodes = make_nodes(kube, env, scaled=name == "prod")
        workdir: Path = tmp_path_factory.mktemp(f"kueue-{name}")
        configuration = rendered_configuration(environment_files(REPO_ROOT, name))
        daemon = start_kueue(binary, control_plane.kubeconfig, configuration, workdir)
        try:
            for obj in objects:
                if obj["kind"] == "ClusterQueue":
                    wait_true(
                        kube, KUEUE_API, "ClusterQueue", obj["metadata"]["name"], "Active", jobs.KUEUE_SECONDS
                    )
            yield Shape(name, env, kube, objects, daemon, nodes)
        finally:
            daemon.stop()
            for namespace in sorted({ns for t in env.teams for ns in t.namespaces}):
                for kind, version in (("Job", "batch/v1"), ("Workload", KUEUE_API), ("Pod", "v1")):
                    for item in kube.list(version, kind, namespace):
                        kube.delete(version, kind, item["metadata"]["name"], namespace)
            for node in nodes:
                kube.delete("v1", "Node", node)


@pytest.fixture
def clean(shape: Shape) -> Iterator[Shape]:
    """Each test starts and ends with no Jobs or Workloads in the team namespaces."""
    yield shape
    for namespace in sorted({ns for t in shape.env.teams for ns in t.namespaces}):
        for kind, version in (("Job", "batch/v1"), ("Workload", KUEUE_API)):
            for item in shape.kube.list(version, kind, namespace):
                shape.kube.delete(version, kind, item["metadata"]["name"], namespace)
    wait_for(lambda: _all_queues_empty(shape.kube), jobs.KUEUE_SECONDS, "every queue empty again")
    assert shape.kueue.running(), shape.kueue.log_tail()


def _all_queues_empty(kube: Kube) -> bool:
    queues = kube.list(KUEUE_API, "ClusterQueue")
    return all(not (q.get("status") or {}).get("admittedWorkloads") for q in queues)


def value_of(env: Environment, tier: str) -> int:
    return next(t.value for t in env.tiers if t.name == tier)


def recipe(
    name: str,
    *,
    rdma: bool = True,
    pods: int | None = None,
    queue: str | None = None,
    tier: str | None = None,
) -> Obj:
    """The README's Job with a unique name; optionally without rdma/ib, resized or re-queued."""
    job = readme_job()
    job["metadata"]["name"] = f"{name}-{uuid.uuid4().hex[:6]}"
    container = job["spec"]["template"]["spec"]["containers"][0]
    if not rdma:
        for part in ("requests", "limits"):
            container["resources"][part].pop("rdma/ib", None)
    if pods is not None:
        job["spec"]["parallelism"] = job["spec"]["completions"] = pods
    if queue is not None:
        job["metadata"]["labels"][jobs.QUEUE_LABEL] = queue
    if tier is not None:
        job["metadata"]["labels"][jobs.PRIORITY_LABEL] = tier
        job["spec"]["template"]["spec"]["priorityClassName"] = tier
    return job


def only_flavor(workload: Obj) -> tuple[str, Obj]:
    [pod_set] = workload["status"]["admission"]["podSetAssignments"]
    flavors = set(pod_set["flavors"].values())
    assert len(flavors) == 1, pod_set["flavors"]
    return flavors.pop(), pod_set


def assert_on_topology(shape: Shape, workload: Obj, pods: int) -> Obj:
    flavor, pod_set = only_flavor(workload)
    assert flavor in shape.topology_flavors(), f"admitted onto {flavor}, not a topology (H100) flavor"
    assignment = pod_set.get("topologyAssignment")
    assert assignment, f"no topology assignment on {flavor}: {pod_set}"
    assert HOSTNAME in assignment["levels"], assignment
    assert pod_set["count"] == pods
    return pod_set


def test_the_readme_job_lands_on_h100_with_a_topology_assignment(clean: Shape) -> None:
    job = recipe("readme")
    assert job["metadata"]["namespace"] == "foundation"
    submitted = jobs.submit(clean.kube, job)
    workload = jobs.wait_admitted(clean.kube, submitted)
    assert workload["status"]["admission"]["clusterQueue"] == "foundation"
    pod_set = assert_on_topology(clean, workload, job["spec"]["parallelism"])
    assert pod_set["resourceUsage"]["rdma/ib"] == str(8 * job["spec"]["parallelism"])
    # Kueue injected the flavor's node labels and the training taint's toleration
    template = jobs.reread(clean.kube, submitted)["spec"]["template"]["spec"]
    flavor = only_flavor(workload)[0]
    assert template["nodeSelector"].items() >= clean.env.pool(flavor).node_labels.items()
    assert any(t.get("key") == "trainyard.dev/training" for t in template.get("tolerations", []))
    assert workload["spec"]["priority"] == value_of(clean.env, "training")
    jobs.pods_started(clean.kube, submitted)


def test_without_rdma_it_still_lands_on_h100(clean: Shape) -> None:
    """The job that once fell through onto borrowed L40S GPUs."""
    job = recipe("no-rdma", rdma=False)
    workload = jobs.wait_admitted(clean.kube, jobs.submit(clean.kube, job))
    assert workload["status"]["admission"]["clusterQueue"] == "foundation"
    assert_on_topology(clean, workload, job["spec"]["parallelism"])


def test_a_required_topology_domain_is_honoured(clean: Shape) -> None:
    pool = clean.env.pool(sorted(clean.topology_flavors())[0])
    level = [lvl for lvl in pool.topology_levels if lvl != HOSTNAME][-1]  # the rack
    pods = fan_out(SCALED_NODES if clean.name == "prod" else pool.nodes, 1)[0]  # hosts per rack
    job = recipe("one-rack", pods=pods)
    job["spec"]["template"].setdefault("metadata", {})["annotations"] = {
        "kueue.x-k8s.io/podset-required-topology": level
    }
    workload = jobs.wait_admitted(clean.kube, jobs.submit(clean.kube, job))
    pod_set = assert_on_topology(clean, workload, pods)
    hosts = assigned_hosts(pod_set["topologyAssignment"])
    assert len(hosts) == pods, hosts  # one pod of 8 GPUs per host
    racks = {clean.kube.get("v1", "Node", host)["metadata"]["labels"][level] for host in hosts}  # type: ignore[index]
    assert len(racks) == 1, f"a gang that required one {level} spans {racks}"


def assigned_hosts(assignment: Obj) -> list[str]:
    """Host names of a v1beta2 TopologyAssignment: `slices`, each with `domainCount` and per
    level either one `universal` value or `individual` {prefix, roots, suffix}
    (apis/kueue/v1beta2/workload_types.go in kubernetes-sigs/kueue v0.19.2)."""
    level = assignment["levels"].index(HOSTNAME)
    hosts: list[str] = []
    for piece in assignment["slices"]:
        values = piece["valuesPerLevel"][level]
        if "universal" in values:
            hosts += [values["universal"]] * int(piece.get("domainCount", 1))
        else:
            each = values["individual"]
            hosts += [each.get("prefix", "") + root + each.get("suffix", "") for root in each["roots"]]
    return hosts


def test_the_flex_queue_borrows_the_inference_pool(clean: Shape) -> None:
    inference = [p.name for p in clean.env.pools if p.role == "inference"]
    job = recipe("on-l40s", rdma=False, pods=2, queue="foundation-flex")
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"].update(
        {"cpu": "16", "memory": "128Gi"}
    )
    submitted = jobs.submit(clean.kube, job)
    workload = jobs.wait_admitted(clean.kube, submitted)
    assert workload["status"]["admission"]["clusterQueue"] == "foundation-flex"
    flavor, pod_set = only_flavor(workload)
    assert flavor in inference and not pod_set.get("topologyAssignment")
    # foundation owns no L40S: all of it is borrowed through the root cohort
    flex = clean.queue("foundation-flex")
    [cell] = [
        r
        for r in flex["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        if r["name"] == "nvidia.com/gpu"
    ]
    assert cell["nominalQuota"] == "0"
    jobs.pods_started(clean.kube, submitted)


def test_training_critical_preempts_training_of_the_same_team(clean: Shape) -> None:
    if clean.name != "staging":
        pytest.skip("prod's nodes are scaled down: only staging has quota equal to its nodes")
    pool = clean.env.pool("train-h100")
    [flavor] = [f for f in clean.env.team_flavors["foundation"] if f.pool == pool.name]
    team = next(t for t in clean.env.teams if t.name == "foundation")
    ceiling = pool.schedulable_nodes * (team.max_usage_percent or 100) // 100
    low = jobs.submit(clean.kube, recipe("all-of-it", pods=ceiling))  # every node the team may use
    assert jobs.wait_admitted(clean.kube, low)["status"]["admission"]["clusterQueue"] == "foundation"
    jobs.pods_started(clean.kube, low)
    assert flavor.nodes < ceiling  # it borrowed to get there

    high = jobs.submit(clean.kube, recipe("critical", tier="training-critical"))

    jobs.wait_preempted(clean.kube, low)
    winner = jobs.wait_admitted(clean.kube, high)
    assert winner["spec"]["priority"] == value_of(clean.env, "training-critical")
    assert_on_topology(clean, winner, readme_job()["spec"]["parallelism"])
    jobs.pods_started(clean.kube, high)
    jobs.wait_pending(clean.kube, low, "insufficient")


# What Kueue v0.19.2 writes on the pod template of a job it starts (jobframework
# reconciler.go:1756): only such pods are training pods (tests/controlplane/test_priority_scope.py).
KUEUE_STARTED = {"kueue.x-k8s.io/podset": "main"}


def _pod(namespace: str, priority_class: str | None, labels: dict[str, str] | None = None) -> Obj:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.example/x:1"}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p-{uuid.uuid4().hex[:6]}", "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }


def _dry_run_pod(
    kube: Kube, namespace: str, priority_class: str | None, labels: dict[str, str] | None = None
) -> Obj:
    return kube.create(_pod(namespace, priority_class, labels), dry_run=True)


def _defaulted(kube: Kube, namespace: str) -> Obj | None:
    """A class-less pod of a Kueue-started job in `namespace` as admitted, once the mutating
    policy has defaulted it."""
    pod = _dry_run_pod(kube, namespace, None, KUEUE_STARTED)
    return pod if pod["spec"].get("priorityClassName") else None


def test_pods_in_training_namespaces_run_at_a_training_tier(shape: Shape) -> None:
    kube, env = shape.kube, shape.env
    top_inference = max(t.value for t in env.tiers if t.role == "inference")
    default = env.default_training_tier
    for namespace in env.training_namespaces:
        # admission policies take effect a moment after they are created
        admitted = wait_for(
            lambda ns=namespace: _defaulted(kube, ns),  # type: ignore[misc]
            30,
            f"a defaulted training priority in {namespace}",
        )
        assert admitted["spec"]["priorityClassName"] == default.name
        assert admitted["spec"]["priority"] == default.value > top_inference
        assert admitted["spec"]["preemptionPolicy"] == default.preemption_policy
        critical = _dry_run_pod(kube, namespace, "training-critical", KUEUE_STARTED)
        assert critical["spec"]["priority"] == value_of(env, "training-critical")
    # a pod of the README's Job template, as the job controller creates it once Kueue started it
    template = copy.deepcopy(readme_job()["spec"]["template"])
    pod = kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "readme-pod", "namespace": "foundation", "labels": KUEUE_STARTED},
            "spec": template["spec"],
        },
        dry_run=True,
    )
    assert pod["spec"]["priority"] > top_inference


def test_an_inference_class_is_refused_in_a_training_namespace(shape: Shape) -> None:
    pod = _pod("foundation", "inference-prod", KUEUE_STARTED)
    message = wait_for(lambda: refusal(shape.kube, pod), 30, "the priority policy to refuse a pod")
    assert (
        "pods in training namespaces run at a training tier (training-critical, training); got inference-prod"
        in message
        and "Forbidden" in message
    ), message
    assert refusal(shape.kube, _pod("foundation", "training", KUEUE_STARTED)) is None


def test_an_inference_pod_without_a_class_runs_at_zero(shape: Shape) -> None:
    serving = [ns for t in shape.env.teams for ns in t.namespaces if ns not in shape.env.training_namespaces]
    assert serving, "the shape has a serving namespace"
    pod = _dry_run_pod(shape.kube, serving[0], None)
    assert pod["spec"].get("priority", 0) == 0 and not pod["spec"].get("priorityClassName")
    prod_tier = _dry_run_pod(shape.kube, serving[0], "inference-prod")
    assert prod_tier["spec"]["priority"] == value_of(shape.env, "inference-prod")
