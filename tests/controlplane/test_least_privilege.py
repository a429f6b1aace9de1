"""What each rendered overflow ServiceAccount can and cannot do, checked on the real
kube-apiserver by impersonating it (Impersonate-User: system:serviceaccount:<ns>:<name>)
with every rendered object of the environment applied: RBAC and the rendered admission
policies decide together, as in a cluster.

- The gate may patch the rendered virtual nodes' gate taint, nothing else: not a GPU node
  (RBAC resourceNames), not a label or another taint on a virtual node (its
  ValidatingAdmissionPolicy); and a refused patch is logged with the API server's message.
- interLink's virtual-kubelet reads the Secrets of the namespaces that run spilled pods, not
  any provider's credentials (they are a mounted volume) nor any other namespace's. node-cli
  programs (mock, azure-aci) resolve pod inputs from cluster-wide informers, so their grant is
  cluster-wide: the narrowest that works (docs/overflow.md). Every virtual-kubelet may update
  its own node but not drop the gate taint, and may not touch another provider's node.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
from kubernetes import client, config
from trainyard_gate.overflow.controller import TaintEnforcer
from trainyard_gate.overflow.hysteresis import GateState, Thresholds
from trainyard_gate.overflow.metrics import GateMetrics
from trainyard_gate.overflow.policy import Gate
from trainyard_gate.runtime.nodes import KubeNodes, Want
from trainyard_gate.runtime.reader import Taint

from box.kube import Kube, Obj, wait_for
from box.manifests import REPO_ROOT, environment_objects
from tests.controlplane.fixtures import applied
from tests.controlplane.overflow_scene import make_ready_node, virtual_node_names, wait_node_labelled

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

GATE_TAINT = {"key": "trainyard.dev/overflow-gate", "value": "closed", "effect": "NoSchedule"}
MERGE = "application/merge-patch+json"


@dataclass
class Scene:
    env: str
    objects: list[Obj]
    namespace: str  # the overflow namespace
    virtual: dict[str, str]  # provider -> node
    secrets: dict[str, str]  # provider -> its credentials Secret
    types: dict[str, str]  # provider -> its type (generators/providers/)
    inference: list[str]
    gpu_node: str
    kubeconfig: Path

    def as_user(self, account: str) -> client.CoreV1Api:
        api_client = config.new_client_from_config(config_file=str(self.kubeconfig))  # type: ignore[no-untyped-call]
        api_client.set_default_header("Impersonate-User", f"system:serviceaccount:{self.namespace}:{account}")
        return client.CoreV1Api(api_client)


def refused(call: object, *args: object, **kwargs: object) -> str:
    """The API server's message for a refused call (fails if the call succeeds)."""
    try:
        call(*args, **kwargs)  # type: ignore[operator]
    except client.ApiException as err:
        assert err.status in (403, 422), (err.status, err.body)
        return str(err.body)
    pytest.fail(f"{getattr(call, '__name__', call)}{args} was allowed")


def _secret(name: str, namespace: str, data: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "stringData": data,
    }


@pytest.fixture(params=["staging", "prod"])
def scene(request: pytest.FixtureRequest, kube: Kube, kubeconfig: Path) -> Iterator[Scene]:
    env: str = request.param
    other = f"elsewhere-{uuid.uuid4().hex[:6]}"
    with applied(kube, environment_objects(REPO_ROOT, env), [other]) as objects:
        [ns] = {
            o["metadata"]["namespace"]
            for o in objects
            if o["kind"] == "Deployment" and o["metadata"]["name"] == "overflow-gate"
        }
        virtual = virtual_node_names(objects)
        secrets, types = {}, {}
        for obj in objects:
            if obj["kind"] == "Deployment" and obj["metadata"]["name"].startswith("vk-"):
                provider = obj["metadata"]["labels"]["trainyard.dev/provider"]
                types[provider] = obj["metadata"]["annotations"]["trainyard.dev/provider-type"]
                for volume in obj["spec"]["template"]["spec"].get("volumes", []):
                    if "secret" in volume:
                        secrets[provider] = volume["secret"]["secretName"]
        inference = sorted(
            {o["metadata"]["namespace"] for o in objects if o["kind"] == "HorizontalPodAutoscaler"}
        )
        for name in {*secrets.values(), "unrelated"}:
            kube.apply(_secret(name, ns, {"token": "test"}))
        for namespace in inference:
            kube.apply(_secret("model-token", namespace, {"token": "test"}))
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
        kube.apply(_secret("db", other, {"password": "test"}))
        gpu = f"gpu-lp-{uuid.uuid4().hex[:6]}"
        nodes = [gpu, *virtual.values()]
        maintenance = {"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}
        try:
            make_ready_node(kube, gpu, {"trainyard.dev/pool": "train"}, [maintenance], gpus=8)
            for provider, node in virtual.items():
                provider_taint = {
                    "key": "virtual-kubelet.io/provider",
                    "value": provider,
                    "effect": "NoSchedule",
                }
                wait_node_labelled(
                    kube, node, {"type": "virtual-kubelet"}, {"trainyard.dev/provider": provider}
                )
                make_ready_node(kube, node, {"type": "virtual-kubelet"}, [provider_taint, GATE_TAINT], gpus=8)
            made = Scene(env, objects, ns, virtual, secrets, types, inference, gpu, kubeconfig)
            _wait_validating_policies(made)
            yield made
        finally:
            for node in nodes:
                kube.delete("v1", "Node", node)


def _wait_validating_policies(scene: Scene) -> None:
    """Admission policies take effect a second or two after they are created: until the
    gate's and each virtual-kubelet's policy refuse a dry-run change, nothing is proven."""
    gate = scene.as_user("overflow-gate")
    label = {"metadata": {"labels": {"trainyard.dev/pool": "train"}}}
    for node in scene.virtual.values():
        vk = scene.as_user(node)
        body = {"spec": {"taints": [{"key": "virtual-kubelet.io/provider", "effect": "NoSchedule"}]}}
        for api, change, what in ((gate, label, "the gate's"), (vk, body, "the virtual-kubelet")):
            wait_for(
                partial(_dry_run_refused, api, node, change, None if change is label else MERGE),
                30,
                f"{what} policy on {node}",
            )


def _dry_run_refused(api: client.CoreV1Api, node: str, body: Obj, content_type: str | None = None) -> bool:
    try:
        if content_type:
            api.patch_node(node, body, dry_run="All", _content_type=content_type)
        else:
            api.patch_node(node, body, dry_run="All")
    except client.ApiException as err:
        return err.status == 403 and "ValidatingAdmissionPolicy" in str(err.body)
    return False


def test_the_gate_touches_only_its_own_taint_on_the_rendered_virtual_nodes(
    scene: Scene, caplog: pytest.LogCaptureFixture
) -> None:
    gate = scene.as_user("overflow-gate")
    node = next(iter(scene.virtual.values()))
    nodes = KubeNodes(gate)
    taint = Taint(GATE_TAINT["key"], GATE_TAINT["value"], "NoSchedule")
    [view] = [n for n in nodes.list("type=virtual-kubelet") if n.name == node]
    assert nodes.apply(view, Want(taint, present=False))  # its job: lift its taint...
    [view] = [n for n in nodes.list("type=virtual-kubelet") if n.name == node]
    assert nodes.apply(view, Want(taint, present=True))  # ...and put it back

    # A GPU node: RBAC (resourceNames) refuses; the gate logs the API server's message.
    gpu_gate = Gate("gpu", (("trainyard.dev/pool", "train"),), taint, Thresholds(64, 0, 16, 0))
    metrics = GateMetrics(["gpu"])
    caplog.set_level(logging.ERROR, logger="trainyard_gate")
    assert not TaintEnforcer(nodes, metrics, dry_run=False).enforce(gpu_gate, GateState.CLOSED)
    [record] = [r for r in caplog.records if r.getMessage() == "node taint update failed"]
    error = record.__dict__["trainyard_fields"]["error"]
    assert error.startswith("HTTP 403 Forbidden: nodes ") and "cannot patch resource" in error, error
    assert metrics.registry.get_sample_value("trainyard_gate_errors_total", {"stage": "nodes"}) == 1
    refused(gate.patch_node, scene.gpu_node, {"spec": {"taints": None}}, _content_type=MERGE)

    # A virtual node: its ValidatingAdmissionPolicy refuses anything but its own taint.
    # (trainyard.dev/provider is reset by the MutatingAdmissionPolicy; any other label is a change)
    message = refused(gate.patch_node, node, {"metadata": {"labels": {"trainyard.dev/pool": "train"}}})
    assert "labels and annotations must stay" in message
    message = refused(gate.patch_node, node, {"spec": {"taints": [GATE_TAINT]}}, _content_type=MERGE)
    assert "other taints must stay" in message
    message = refused(gate.patch_node, node, {"spec": {"unschedulable": True}})
    assert "may not cordon" in message
    refused(gate.read_namespaced_secret, "unrelated", scene.namespace)
    refused(gate.delete_node, node)


def test_a_virtual_kubelet_reads_only_its_secrets_and_cannot_open_its_gate(scene: Scene) -> None:
    for provider, node in scene.virtual.items():
        vk = scene.as_user(node)
        if scene.types[provider] == "interlink":
            # Credentials are a Secret volume the kubelet mounts: not even its own is readable
            # through the API, and certainly not another provider's.
            for secret in scene.secrets.values():
                refused(vk.read_namespaced_secret, secret, scene.namespace)
            refused(vk.read_namespaced_secret, "unrelated", scene.namespace)
            refused(vk.list_secret_for_all_namespaces)
        else:  # node-cli's informers list every namespace; a narrower grant breaks pods
            assert vk.list_secret_for_all_namespaces().items is not None
        for namespace in scene.inference:  # what spilled pods may mount
            assert vk.read_namespaced_secret("model-token", namespace).data
        elsewhere = [o for o in scene.objects if o["kind"] == "Namespace"]
        assert elsewhere  # (the scene's extra namespace is not among the rendered ones)

        # Its own node: an update is fine, dropping the gate taint is not.
        vk.patch_node(node, {"metadata": {"annotations": {"heartbeat": "1"}}})
        spec = vk.read_node(node).spec
        current = vk.api_client.sanitize_for_serialization((spec and spec.taints) or [])
        taints = [t for t in current if t["key"] != GATE_TAINT["key"]]
        message = refused(vk.patch_node, node, {"spec": {"taints": taints}}, _content_type=MERGE)
        assert "may not remove the overflow gate taint" in message
        for other_node in scene.virtual.values():
            if other_node != node:
                refused(vk.patch_node, other_node, {"metadata": {"annotations": {"x": "1"}}})
        refused(vk.patch_node, scene.gpu_node, {"metadata": {"annotations": {"x": "1"}}})
