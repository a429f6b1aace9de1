"""The pinned descheduler, dry-run, with the RENDERED overflow DeschedulerPolicy.

Scene per environment with an overflow component: its rendered objects applied (so the
ValidatingAdmissionPolicy on inference pods and the MutatingAdmissionPolicy on virtual
nodes are live), one Ready virtual node carrying the rendered gate taint, two in-cluster
GPU nodes with room (4 of 8 GPUs busy each), and inference pods bound to the virtual node:
targets (owned, old enough, tolerating nothing or only the provider taint) and pods the
policy must protect, among them a training-priority pod, a pod outside the inference
namespaces and a pod made from each rendered overflow Deployment's template (the
machinery, which the apiserver must admit at system-cluster-critical priority). Each
descheduler pass runs once (interval 0) and logs what it
would evict; the test then deletes those pods, as the eviction would, and runs again.
"""

from __future__ import annotations

import datetime
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from box.daemon import Daemon
from box.kube import Kube, Obj, refusal, wait_for
from box.manifests import REPO_ROOT, environment_objects
from generators.layout import environment_names
from generators.model.load import load
from tests.controlplane.fixtures import applied, require_tools
from tests.controlplane.harness import ControlPlane
from tests.controlplane.overflow_scene import (
    OLD_ENOUGH,
    PodSpec,
    gates,
    make_ready_node,
    owner_replica_set,
    place_pod,
    timestamp,
    virtual_node_names,
    wait_node_labelled,
)

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

POLICY_FILE = Path("overflow/trainyard-system/configmap-descheduler.yaml")
CYCLE_SECONDS = 2
CYCLE_START = "Resetting pod evictor counters"
CYCLE_END = "Number of evictions/requests"
SKIPPED_CYCLE = "Skipping descheduling cycle: requires >=2 nodes"
EVICTED = re.compile(r'"Evicted pod in dry run mode" pod="([^"]+)"')
PASS_SECONDS = 120
CAPS = ("maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictPerNamespace", "maxNoOfPodsToEvictTotal")
PROVIDER_TAINT_KEY = "virtual-kubelet.io/provider"
SYSTEM_CLUSTER_CRITICAL = 2000000000  # the built-in class the apiserver creates at start-up


def environments_with_overflow() -> list[str]:
    return [
        name
        for name in environment_names(REPO_ROOT)
        if (REPO_ROOT / "rendered" / name / POLICY_FILE).is_file()
    ]


def rendered_policy(env_name: str) -> dict[str, object]:
    path = REPO_ROOT / "rendered" / env_name / POLICY_FILE
    if not path.is_file():
        pytest.skip(f"{path.relative_to(REPO_ROOT)} not rendered yet (overflow component)")
    config_map = yaml.safe_load(path.read_text(encoding="utf-8"))
    policy: dict[str, object] = yaml.safe_load(config_map["data"]["policy.yaml"])
    return policy


def inference_namespaces(objects: list[Obj]) -> list[str]:
    """Namespaces the rendered toleration policy is bound to (where inference runs)."""
    for obj in objects:
        if obj["kind"] == "ValidatingAdmissionPolicyBinding" and "matchResources" in obj["spec"]:
            selector = obj["spec"]["matchResources"]["namespaceSelector"]
            [expression] = selector["matchExpressions"]
            return list(expression["values"])
    raise AssertionError("no ValidatingAdmissionPolicyBinding rendered")


@dataclass
class Scene:
    env_name: str
    policy_path: Path
    policy: dict[str, object]
    targets: set[str]
    protected: dict[str, str]  # pod -> why it must stay
    kubeconfig: Path
    workdir: Path
    gate_key: str
    other: str  # a namespace outside the inference namespaces
    machinery: list[str]  # namespace/name of the pods made from rendered Deployment templates


def run_pass(binary: Path, scene: Scene, index: int) -> tuple[list[str], str]:
    """One descheduling cycle in dry-run: the pods (namespace/name) it would evict, and its log.

    Not `--descheduling-interval=0` (one cycle): in dry-run, v0.36.0 mirrors the cluster
    into a fake client through informer event handlers and runs the first cycle right after
    the real informers sync, before the mirror is filled (its first cycle here saw 0 nodes).
    So the process runs cycles 2 s apart and the SECOND cycle is the one read; dry-run
    restores "evicted" pods after every cycle, so cycles do not influence each other.
    """
    daemon = Daemon(
        f"descheduler-pass-{index}",
        [
            str(binary),
            f"--kubeconfig={scene.kubeconfig}",
            f"--policy-config-file={scene.policy_path}",
            "--dry-run",
            f"--descheduling-interval={CYCLE_SECONDS}s",
            "--secure-port=0",
            "--v=4",
        ],
        scene.workdir / f"descheduler-{index}.log",
    )
    daemon.start()
    try:
        daemon.wait_until(lambda: daemon.log_text().count(CYCLE_END) >= 2, PASS_SECONDS, "two cycles")
    finally:
        daemon.stop()
    cycles = daemon.log_text().split(CYCLE_START)
    second = cycles[2]  # [0] is start-up, [1] the first cycle
    return EVICTED.findall(second), second


@pytest.fixture(params=environments_with_overflow() or ["(none)"])
def scene(
    request: pytest.FixtureRequest, kube: Kube, control_plane: ControlPlane, tmp_path: Path
) -> Iterator[Scene]:
    env_name: str = request.param
    if env_name == "(none)":
        pytest.skip("no environment renders overflow/trainyard-system/configmap-descheduler.yaml yet")
    policy = rendered_policy(env_name)
    other = f"provider-native-{uuid.uuid4().hex[:6]}"
    with applied(kube, environment_objects(REPO_ROOT, env_name), [other]) as objects:
        nodes: list[str] = []
        try:
            virtual, gate_key = _virtual_nodes(kube, objects, nodes)
            _in_cluster_nodes(kube, nodes, other)
            targets, protected = _inference_pods(
                kube,
                inference_namespaces(objects)[0],
                other,
                virtual,
                gate_key,
                _lowest_training_class(env_name),
            )
            machinery = _machinery_pods(kube, objects, virtual)
            protected |= dict.fromkeys(
                machinery, "overflow machinery: outside the inference namespaces, system-cluster-critical"
            )
            policy_path = tmp_path / "policy.yaml"
            policy_path.write_text(yaml.safe_dump(policy), encoding="utf-8")
            yield Scene(
                env_name,
                policy_path,
                policy,
                targets,
                protected,
                control_plane.kubeconfig,
                tmp_path,
                gate_key,
                other,
                machinery,
            )
        finally:
            for name in nodes:
                kube.delete("v1", "Node", name)


def _virtual_nodes(kube: Kube, objects: list[Obj], nodes: list[str]) -> tuple[str, str]:
    """One Ready virtual node per rendered gate, registered as virtual-kubelet does, gate closed.

    Returns the first one's name (the pods go there) and the gate taint key.
    """
    names = virtual_node_names(objects)
    for gate in gates(objects):
        virtual = names[gate.name]
        provider_taint = {"key": PROVIDER_TAINT_KEY, "value": gate.name, "effect": "NoSchedule"}
        # The program's own label (type=virtual-kubelet for node-cli, virtual-node.interlink/type
        # for interLink): the selector's other key; trainyard.dev/provider comes from admission.
        own = {k: v for k, v in gate.match_labels.items() if k != "trainyard.dev/provider"}
        labels = {**own, "kubernetes.io/role": "agent", "kubernetes.io/hostname": virtual}
        wait_node_labelled(kube, virtual, labels, gate.match_labels)
        node = make_ready_node(kube, virtual, labels, [provider_taint, gate.taint], gpus=8)
        nodes.append(virtual)
        # The rendered MutatingAdmissionPolicy added trainyard.dev/provider: the gate's
        # node selector (and so the taint) relies on it.
        assert gate.match_labels.items() <= node["metadata"]["labels"].items(), node["metadata"]["labels"]
    first = gates(objects)[0]
    return names[first.name], first.taint["key"]


def _in_cluster_nodes(kube: Kube, nodes: list[str], other: str) -> None:
    """Two Ready 8-GPU nodes, each half busy (4 GPUs free) with a pod of `other` namespace."""
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    for index in (1, 2):
        name = f"gpu-{index}"
        labels = {"trainyard.dev/pool": "in-cluster", "kubernetes.io/hostname": name}
        make_ready_node(kube, name, labels, [], gpus=8)
        nodes.append(name)
        owner = owner_replica_set(kube, other, f"busy-{index}", 1)
        place_pod(kube, PodSpec(f"busy-{index}", other, name, [], owner, gpus=4))


def _lowest_training_class(env_name: str) -> str:
    """The environment's lowest training tier: the descheduler must never evict even that."""
    tiers = load(REPO_ROOT, env_name).tiers
    return min((t.value, t.name) for t in tiers if t.role == "training")[1]


def _machinery_pods(kube: Kube, objects: list[Obj], virtual: str) -> list[str]:
    """A pod from each rendered overflow Deployment's template, owned, old, on `virtual` and
    not tolerating the gate: evictable by everything but namespace and priority."""
    placed = []
    for deployment in objects:
        if (
            deployment["kind"] != "Deployment"
            or deployment["metadata"]["labels"].get("trainyard.dev/component") != "overflow"
        ):
            continue
        namespace, name = deployment["metadata"]["namespace"], deployment["metadata"]["name"]
        owner = owner_replica_set(kube, namespace, f"{name}-test", 1)["metadata"]
        template = deployment["spec"]["template"]
        reference = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": owner["name"],
            "uid": owner["uid"],
            "controller": True,
        }
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-test",
                    "namespace": namespace,
                    "labels": template["metadata"]["labels"],
                    "ownerReferences": [reference],
                },
                "spec": {**template["spec"], "nodeName": virtual},
            }
        )
        started = timestamp(OLD_ENOUGH)
        kube.patch_status(
            "v1",
            "Pod",
            f"{name}-test",
            {
                "phase": "Running",
                "startTime": started,
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": started}],
            },
            namespace,
        )
        placed.append(f"{namespace}/{name}-test")
    assert placed, "no overflow Deployment rendered"
    return placed


def _inference_pods(
    kube: Kube, namespace: str, other: str, virtual: str, gate_key: str, training_class: str
) -> tuple[set[str], dict[str, str]]:
    """Pods bound to `virtual`: (targets, protected pod -> why it must stay)."""
    owner = owner_replica_set(kube, namespace, "chat-api-test", 8)
    provider = [{"key": PROVIDER_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    targets = [
        PodSpec("spill-1", namespace, virtual, provider, owner),
        PodSpec("spill-2", namespace, virtual, provider, owner),
        PodSpec("spill-3", namespace, virtual, [], owner),  # tolerates nothing at all
        PodSpec("spill-4", namespace, virtual, [], owner, gpus=4),  # exactly fits a free half
        PodSpec("spill-5", namespace, virtual, provider, owner),
    ]
    gate_ok = [*provider, {"key": gate_key, "operator": "Exists", "effect": "NoSchedule"}]
    protected = [
        (
            PodSpec("young", namespace, virtual, provider, owner, started=datetime.timedelta(seconds=10)),
            "started 10 s ago: younger than minPodAge",
        ),
        (PodSpec("bare", namespace, virtual, provider), "no owner: nothing would recreate it"),
        (
            PodSpec("too-big", namespace, virtual, provider, owner, gpus=8),
            "8 GPUs fit on no in-cluster node (nodeFit)",
        ),
        (
            PodSpec(
                "critical", namespace, virtual, provider, owner, priority_class="system-cluster-critical"
            ),
            "priority >= system-cluster-critical (SystemCriticalPods protection)",
        ),
        (
            PodSpec(
                "gated-ok", other, virtual, gate_ok, owner_replica_set(kube, other, "provider-native", 1)
            ),
            "tolerates the gate taint (allowed outside inference namespaces)",
        ),
        (
            PodSpec("outside", other, virtual, provider, owner_replica_set(kube, other, "outside", 1)),
            "outside the inference namespaces (namespaces.include)",
        ),
        (
            PodSpec("training", namespace, virtual, provider, owner, priority_class=training_class),
            f"priority class {training_class}: not below priorityThreshold",
        ),
    ]
    for spec in [*targets, *(spec for spec, _ in protected)]:
        place_pod(kube, spec)
    return {f"{p.namespace}/{p.name}" for p in targets}, {
        f"{p.namespace}/{p.name}": why for p, why in protected
    }


def test_policy_caps_are_set(scene: Scene) -> None:
    """Unset caps mean unlimited evictions per cycle: the overflow policy must set them."""
    for cap in CAPS:
        assert isinstance(scene.policy.get(cap), int) and scene.policy[cap] > 0, cap  # type: ignore[operator]


def test_migrates_exactly_the_targets_within_caps(scene: Scene, kube: Kube) -> None:
    binary = require_tools("descheduler")["descheduler"]
    caps = [int(scene.policy[c]) for c in CAPS if scene.policy.get(c) is not None]  # type: ignore[call-overload]
    per_cycle = min(caps)
    remaining = set(scene.targets)
    evicted_all: list[str] = []
    for index in range(len(scene.targets) // per_cycle + 2):
        evicted, log = run_pass(binary, scene, index)
        assert SKIPPED_CYCLE in log or "Processing node" in log, log[-3000:]
        # The scene has at least three Ready nodes (a virtual node per gate, two in-cluster):
        # a skipped cycle means the rendered policy selects fewer than two of them, so in a
        # cluster nothing on a virtual node would ever be migrated back. A defect, not an xfail.
        assert SKIPPED_CYCLE not in log, (
            f"{scene.env_name}: the descheduler skipped the cycle ({SKIPPED_CYCLE}): the rendered "
            f"policy's nodeSelector {scene.policy.get('nodeSelector')!r} selects fewer than 2 Ready "
            "nodes, so nothing on the virtual node is ever migrated back"
        )
        assert len(evicted) == len(set(evicted)), evicted
        protected_hit = {pod: scene.protected[pod] for pod in evicted if pod in scene.protected}
        assert not protected_hit, f"would evict protected pods: {protected_hit}"
        assert set(evicted) <= remaining, f"pass {index}: unexpected {set(evicted) - remaining}"
        assert len(evicted) == min(per_cycle, len(remaining)), (index, evicted, sorted(remaining))
        for pod in evicted:  # what the eviction would have done
            namespace, name = pod.split("/")
            kube.delete("v1", "Pod", name, namespace)
        remaining -= set(evicted)
        evicted_all += evicted
    assert not remaining and set(evicted_all) == scene.targets
    for pod in scene.protected:
        namespace, name = pod.split("/")
        assert kube.get("v1", "Pod", name, namespace) is not None


def test_the_machinery_runs_at_system_critical_priority(scene: Scene, kube: Kube) -> None:
    """The apiserver admits system-cluster-critical outside kube-system (the Priority admission
    plugin resolves it); virtual-kubelets, gate and descheduler outrank every tier."""
    names = {pod.split("/")[1].removesuffix("-test") for pod in scene.machinery}
    assert {"overflow-gate", "descheduler"} <= names and any(n.startswith("vk-") for n in names), names
    for pod in scene.machinery:
        namespace, name = pod.split("/")
        stored = kube.get("v1", "Pod", name, namespace)
        assert stored is not None and namespace != "kube-system"
        assert stored["spec"]["priorityClassName"] == "system-cluster-critical", pod
        assert stored["spec"]["priority"] == SYSTEM_CLUSTER_CRITICAL, pod


def sneaky_pod(namespace: str, gate_key: str) -> Obj:
    """An inference pod that tolerates the gate taint: the rendered policy must refuse it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "sneaky", "namespace": namespace},
        "spec": {
            "tolerations": [{"key": gate_key, "operator": "Exists"}],
            "containers": [{"name": "c", "image": "registry.example/vllm:1"}],
        },
    }


def test_inference_pods_may_not_tolerate_the_gate(scene: Scene, kube: Kube) -> None:
    """The rendered ValidatingAdmissionPolicy refuses a gate toleration in inference namespaces."""
    namespace = sorted(scene.targets)[0].split("/")[0]
    pod = sneaky_pod(namespace, scene.gate_key)
    # Policies take effect a moment after they are created; wait for that, then check.
    message = wait_for(lambda: refusal(kube, pod), 30, "the toleration policy to refuse a pod")
    assert "overflow gate" in message and "Forbidden" in message, message
    assert refusal(kube, {**pod, "metadata": {"name": "sneaky", "namespace": scene.other}}) is None
