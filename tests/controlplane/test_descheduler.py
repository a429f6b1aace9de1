"""The pinned descheduler, dry-run, with the RENDERED overflow DeschedulerPolicy.

Scene per environment with an overflow component: its rendered objects applied (so the
ValidatingAdmissionPolicy on inference pods and the MutatingAdmissionPolicy on virtual
nodes are live), one Ready virtual node carrying the rendered gate taint, two in-cluster
GPU nodes with room (4 of 8 GPUs busy each), and inference pods bound to the virtual node:
targets (owned, old enough, tolerating nothing or only the provider taint) and pods the
policy must protect. Each descheduler pass runs once (interval 0) and logs what it
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

from generators.spec.load import environment_names
from tests.controlplane.daemon import Daemon
from tests.controlplane.fixtures import require_tools
from tests.controlplane.harness import ControlPlane
from tests.controlplane.kube import Kube, Obj
from tests.controlplane.manifests import (
    REPO_ROOT,
    apply_all,
    ensure_external_namespaces,
    environment_objects,
    remove_all,
)
from tests.controlplane.overflow_scene import (
    PodSpec,
    gates,
    make_ready_node,
    owner_replica_set,
    place_pod,
    virtual_node_names,
)

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

POLICY_FILE = Path("overflow/trainyard-system/configmap-descheduler.yaml")
EVICTED = re.compile(r'"Evicted pod in dry run mode" pod="([^"]+)"')
PASS_SECONDS = 120
CAPS = ("maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictPerNamespace", "maxNoOfPodsToEvictTotal")
PROVIDER_TAINT_KEY = "virtual-kubelet.io/provider"


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
        if obj["kind"] == "ValidatingAdmissionPolicyBinding":
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


def run_pass(binary: Path, scene: Scene, index: int) -> list[str]:
    """One descheduling cycle in dry-run; the pods (namespace/name) it would evict."""
    daemon = Daemon(
        f"descheduler-pass-{index}",
        [str(binary), f"--kubeconfig={scene.kubeconfig}", f"--policy-config-file={scene.policy_path}",
         "--dry-run", "--descheduling-interval=0s", "--secure-port=0", "--v=4"],
        scene.workdir / f"descheduler-{index}.log",
    )  # fmt: skip
    daemon.start()
    code = daemon.wait_exit(PASS_SECONDS)
    daemon.stop()
    log = daemon.log_text()
    assert code == 0, f"descheduler exited {code}:\n{daemon.log_tail()}"
    assert "RemovePodsViolatingNodeTaints" in log or "overflow" in log, daemon.log_tail()
    return EVICTED.findall(log)


@pytest.fixture(params=environments_with_overflow() or ["(none)"])
def scene(request: pytest.FixtureRequest, kube: Kube, control_plane: ControlPlane,
          tmp_path: Path) -> Iterator[Scene]:  # fmt: skip
    env_name: str = request.param
    if env_name == "(none)":
        pytest.skip("no environment renders overflow/trainyard-system/configmap-descheduler.yaml yet")
    policy = rendered_policy(env_name)
    objects = environment_objects(REPO_ROOT, env_name)
    external = ensure_external_namespaces(kube, objects)
    apply_all(kube, objects)
    nodes: list[str] = []
    other = f"provider-native-{uuid.uuid4().hex[:6]}"
    try:
        scene = _build(kube, env_name, policy, objects, nodes, other, tmp_path)
        scene.kubeconfig = control_plane.kubeconfig
        yield scene
    finally:
        for name in nodes:
            kube.delete("v1", "Node", name)
        remove_all(kube, objects, [*external, other])


def _build(kube: Kube, env_name: str, policy: dict[str, object], objects: list[Obj], nodes: list[str],
           other: str, workdir: Path) -> Scene:  # fmt: skip
    gate = gates(objects)[0]
    virtual = virtual_node_names(objects)[gate.name]
    provider_taint = {"key": PROVIDER_TAINT_KEY, "value": gate.name, "effect": "NoSchedule"}
    labels = {"type": "virtual-kubelet", "kubernetes.io/role": "agent", "kubernetes.io/hostname": virtual}
    node = make_ready_node(kube, virtual, labels, [provider_taint, gate.taint], gpus=8)
    nodes.append(virtual)
    # The rendered MutatingAdmissionPolicy labels the virtual node with its provider, which
    # is what the gate's node selector (and so the taint) relies on.
    assert gate.match_labels.items() <= node["metadata"]["labels"].items(), node["metadata"]["labels"]
    for index in (1, 2):
        name = f"gpu-{index}"
        make_ready_node(
            kube, name, {"trainyard.dev/pool": "in-cluster", "kubernetes.io/hostname": name}, [], gpus=8
        )
        nodes.append(name)

    namespace = inference_namespaces(objects)[0]
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    for index in (1, 2):  # half of each in-cluster node is busy: 4 GPUs free on each
        place_pod(
            kube,
            PodSpec(
                f"busy-{index}",
                other,
                f"gpu-{index}",
                [],
                owner_replica_set(kube, other, f"busy-{index}", 1),
                gpus=4,
            ),
        )
    owner = owner_replica_set(kube, namespace, "chat-api-test", 8)
    tolerate_provider = [{"key": PROVIDER_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    targets = [
        PodSpec("spill-1", namespace, virtual, tolerate_provider, owner),
        PodSpec("spill-2", namespace, virtual, tolerate_provider, owner),
        PodSpec("spill-3", namespace, virtual, [], owner),  # tolerates nothing at all
        PodSpec("spill-4", namespace, virtual, [], owner, gpus=4),  # exactly fits the free half
        PodSpec("spill-5", namespace, virtual, tolerate_provider, owner),
    ]
    just_started = datetime.timedelta(seconds=10)
    tolerate_gate = [
        *tolerate_provider,
        {"key": gate.taint["key"], "operator": "Exists", "effect": "NoSchedule"},
    ]
    other_owner = owner_replica_set(kube, other, "provider-native", 1)
    protected = {
        "young": (PodSpec("young", namespace, virtual, tolerate_provider, owner, started=just_started),
                  "started 10 s ago: younger than minPodAge"),
        "bare": (PodSpec("bare", namespace, virtual, tolerate_provider),
                 "no owner: nothing would recreate it"),
        "too-big": (PodSpec("too-big", namespace, virtual, tolerate_provider, owner, gpus=8),
                    "8 GPUs fit on no in-cluster node (nodeFit)"),
        "critical": (PodSpec("critical", namespace, virtual, tolerate_provider, owner,
                             priority_class="system-cluster-critical"),
                     "priority >= system-cluster-critical (SystemCriticalPods protection)"),
        "gated-ok": (PodSpec("gated-ok", other, virtual, tolerate_gate, other_owner),
                     "tolerates the gate taint (allowed outside inference namespaces)"),
    }  # fmt: skip
    for spec in [*targets, *(spec for spec, _ in protected.values())]:
        place_pod(kube, spec)
    policy_path = workdir / "policy.yaml"
    policy_path.write_text(yaml.safe_dump(policy), encoding="utf-8")
    return Scene(
        env_name, policy_path, policy,
        targets={f"{p.namespace}/{p.name}" for p in targets},
        protected={f"{spec.namespace}/{spec.name}": why for spec, why in protected.values()},
        kubeconfig=Path(), workdir=workdir, gate_key=gate.taint["key"],
    )  # fmt: skip


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
        evicted = run_pass(binary, scene, index)
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


def test_inference_pods_may_not_tolerate_the_gate(scene: Scene, kube: Kube) -> None:
    """The rendered ValidatingAdmissionPolicy refuses a gate toleration in inference namespaces."""
    [target] = sorted(scene.targets)[:1]
    namespace = target.split("/")[0]
    with pytest.raises(Exception, match="overflow gate"):
        kube.create({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "sneaky", "namespace": namespace},
            "spec": {"tolerations": [{"key": scene.gate_key, "operator": "Exists"}],
                     "containers": [{"name": "c", "image": "registry.example/vllm:1"}]},
        })  # fmt: skip
