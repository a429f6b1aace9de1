"""Quarantine admission on the real kube-apiserver, every rendered object of the environment
applied: inference pods get the quarantine toleration, training pods may not carry
one, and the health controller's identity may change only its taint and annotations on pool
nodes (RBAC and the rendered ValidatingAdmissionPolicy together, by impersonation).

staging renders the built-in backend (trainyard.dev/gpu-health), dev the NVSentinel one (the
taint keys its fault-quarantine rule-sets set, no controller).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from box.kube import Kube, Obj, refusal, wait_for
from box.manifests import REPO_ROOT, environment_objects
from generators.components.priorities import inference_namespaces
from generators.model.environment import Environment
from generators.model.health import POOL_LABEL, REASON_ANNOTATION, SINCE_ANNOTATION, TAINT_KEY
from generators.model.load import load
from tests.controlplane.fixtures import applied
from tests.controlplane.overflow_scene import make_ready_node

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

MERGE = "application/merge-patch+json"
MAINTENANCE = {"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}


@dataclass
class Scene:
    env: Environment
    kube: Kube
    kubeconfig: Path

    def as_controller(self) -> client.CoreV1Api:
        assert self.env.health is not None and self.env.health.controller is not None
        api_client = config.new_client_from_config(config_file=str(self.kubeconfig))  # type: ignore[no-untyped-call]
        account = f"system:serviceaccount:{self.env.health.controller.namespace}:gpu-health"
        api_client.set_default_header("Impersonate-User", account)
        return client.CoreV1Api(api_client)


@pytest.fixture(scope="module", params=["staging", "dev"])
def scene(request: pytest.FixtureRequest, kube: Kube, kubeconfig: Path) -> Iterator[Scene]:
    name: str = request.param
    with applied(kube, environment_objects(REPO_ROOT, name)):
        yield Scene(load(REPO_ROOT, name), kube, kubeconfig)


def _pod(namespace: str, tolerations: list[dict[str, Any]] | None = None) -> Obj:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.example/x:1"}]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p-{uuid.uuid4().hex[:6]}", "namespace": namespace},
        "spec": spec,
    }


def _quarantine_tolerations(pod: Obj, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    return [t for t in pod["spec"].get("tolerations", []) if t.get("key") in keys]


def test_inference_pods_tolerate_the_quarantine_taints(scene: Scene) -> None:
    assert scene.env.health is not None
    keys = scene.env.health.taint_keys
    serving = inference_namespaces(scene.env)
    if not serving:
        pytest.skip(f"{scene.env.name} has no inference namespace")
    for namespace in serving:
        admitted = wait_for(
            lambda ns=namespace: (
                _quarantine_tolerations(  # type: ignore[misc]
                    scene.kube.create(_pod(ns), dry_run=True), keys
                )
                or None
            ),
            30,
            f"tolerations in {namespace}",
        )
        assert sorted((t["key"], t["operator"], t["effect"]) for t in admitted) == sorted(
            (t.key, "Exists", t.effect) for t in scene.env.health.tolerations
        )
    # A pod with tolerations of its own keeps them and gains the quarantine one, once.
    own = {"key": "example.com/own", "operator": "Exists", "effect": "NoSchedule"}
    pod = scene.kube.create(
        _pod(serving[0], [own, {"key": keys[0], "operator": "Exists", "effect": "NoSchedule"}]), dry_run=True
    )
    assert own in pod["spec"]["tolerations"]
    assert len(_quarantine_tolerations(pod, keys)) == len(keys)


def test_training_pods_may_not_tolerate_a_quarantine_taint(scene: Scene) -> None:
    assert scene.env.health is not None
    namespace = scene.env.training_namespaces[0]
    key = scene.env.health.taint_keys[0]
    keyed = _pod(namespace, [{"key": key, "operator": "Exists", "effect": "NoSchedule"}])

    def refused_naming_the_key() -> str | None:  # the environment's own policy, not a previous one
        message = refusal(scene.kube, keyed)
        return message if message and key in message else None

    def plain_pod_mutated() -> bool:
        # The priority policies are a pair: the mutating one names the default training class,
        # the validating one refuses a training pod without it. The apiserver observes each
        # binding on its own, so right after an apply (or the previous environment's removal)
        # the validating half may answer before the mutating half: a plain pod is refused
        # (403) until both are seen. Wait on that real condition, the mutation observed.
        try:
            admitted = scene.kube.create(_pod(namespace), dry_run=True)
        except Exception:
            return False
        return bool(admitted["spec"].get("priorityClassName"))

    message = wait_for(refused_naming_the_key, 30, "the quarantine policy to refuse a pod")
    wait_for(plain_pod_mutated, 30, f"the training-priority mutation observed in {namespace}")
    assert "training pods must not tolerate the quarantine taint" in message, message
    everything = _pod(namespace, [{"operator": "Exists"}])
    assert "operator Exists and no key tolerates every taint" in (refusal(scene.kube, everything) or "")
    assert refusal(scene.kube, _pod(namespace)) is None
    assert refusal(scene.kube, _pod(namespace, [MAINTENANCE | {"operator": "Equal"}])) is None


def _refused(call: Any, *args: Any, **kwargs: Any) -> str:
    try:
        call(*args, **kwargs)
    except client.ApiException as err:
        assert err.status in (403, 422), (err.status, err.body)
        return str(err.body)
    pytest.fail(f"{args} was allowed")


def _policy_active(api: client.CoreV1Api, node: str) -> bool:
    try:
        api.patch_node(node, {"spec": {"unschedulable": True}}, dry_run="All")
    except client.ApiException as err:
        return err.status == 403 and "ValidatingAdmissionPolicy" in str(err.body)
    return False


def test_the_controller_changes_only_its_taint_and_annotations_on_pool_nodes(scene: Scene) -> None:
    if scene.env.health is None or scene.env.health.controller is None:
        pytest.skip(f"{scene.env.name} renders no health controller (backend {scene.env.health})")
    pool = scene.env.health.controller.pools[0]
    node, stray = f"gpu-h-{uuid.uuid4().hex[:6]}", f"cpu-h-{uuid.uuid4().hex[:6]}"
    make_ready_node(scene.kube, node, dict(pool.node_labels), [MAINTENANCE], gpus=pool.gpus_per_node)
    make_ready_node(scene.kube, stray, {"example.com/role": "cpu"}, [], gpus=0)
    controller = scene.as_controller()
    try:
        wait_for(partial(_policy_active, controller, node), 30, "the health controller's node policy")
        quarantine = {"key": TAINT_KEY, "value": "gpu-temperature", "effect": "NoSchedule"}
        notes = {REASON_ANNOTATION: "gpu-temperature", SINCE_ANNOTATION: "2026-12-01T00:00:00Z"}
        # Its job: add the taint (other taints kept) with both annotations, then take them off.
        controller.patch_node(
            node,
            {"metadata": {"annotations": notes}, "spec": {"taints": [MAINTENANCE, quarantine]}},
            _content_type=MERGE,
        )
        taints = scene.kube.get("v1", "Node", node)["spec"]["taints"]  # type: ignore[index]
        assert {t["key"] for t in taints} == {MAINTENANCE["key"], TAINT_KEY}
        controller.patch_node(
            node,
            {"metadata": {"annotations": dict.fromkeys(notes)}, "spec": {"taints": [MAINTENANCE]}},
            _content_type=MERGE,
        )
        annotations = scene.kube.get("v1", "Node", node)["metadata"].get("annotations", {})  # type: ignore[index]
        assert REASON_ANNOTATION not in annotations and SINCE_ANNOTATION not in annotations

        alone = {"spec": {"taints": [quarantine]}}
        message = _refused(controller.patch_node, node, alone, _content_type=MERGE)
        assert "other taints must stay" in message
        no_execute = quarantine | {"effect": "NoExecute"}
        message = _refused(
            controller.patch_node, node, {"spec": {"taints": [MAINTENANCE, no_execute]}}, _content_type=MERGE
        )
        assert "effect NoSchedule only" in message
        message = _refused(controller.patch_node, node, {"spec": {"unschedulable": True}})
        assert "may not cordon" in message
        message = _refused(controller.patch_node, node, {"metadata": {"labels": {POOL_LABEL: "other"}}})
        assert "labels and other annotations must stay" in message
        message = _refused(controller.patch_node, node, {"metadata": {"annotations": {"x": "y"}}})
        assert "labels and other annotations must stay" in message
        message = _refused(controller.patch_node, stray, alone, _content_type=MERGE)
        assert f"on nodes labelled {POOL_LABEL}" in message
        _refused(controller.delete_node, node)
        _refused(controller.list_namespaced_secret, "kube-system")
    finally:
        for name in (node, stray):
            scene.kube.delete("v1", "Node", name)
