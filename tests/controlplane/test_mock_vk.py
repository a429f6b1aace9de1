"""The reference virtual-kubelet v1.14.1 with its mock provider, staging's overflow provider,
run for real against the test kube-apiserver with staging's rendered objects
(tools/install.py pins and builds it).

The binary (`tool_path("virtual-kubelet")`, built from the Go module proxy) starts with the
rendered Deployment's arguments and environment and the rendered provider ConfigMap, and
authenticates as the rendered ServiceAccount `vk-mock` (a TokenRequest), so the rendered
RBAC decides what it may read. It registers node vk-mock, which the rendered admission
policy labels for the gate; a pod bound to it in the inference namespace, reading a Secret
through `secretKeyRef`, runs: v1.14.1 resolves env from its cluster-wide Secret informer
(node/nodeutil/controller.go), which the rendered grant allows (generators/providers/mock.py).
Expected values are literals of environments/staging.yaml.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from box import pki
from box.daemon import Daemon, free_port
from box.kube import Kube, Obj, is_true
from box.manifests import REPO_ROOT, environment_objects
from tests.controlplane.fixtures import applied
from tests.controlplane.harness import ControlPlane
from tests.controlplane.overflow_scene import wait_node_labelled
from tests.controlplane.virtual_kubelets import rendered, service_account_kubeconfig, with_flags
from tests.support import tool
from tools.toolchain import PINS

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

NODE = "vk-mock"
SERVING = "serving-staging"  # environments/staging.yaml: overflow.inference[0].namespace
GPUS = "8"  # ... overflow.providers[mock].gpus
TAINT = {"key": "virtual-kubelet.io/provider", "value": "mock", "effect": "NoSchedule"}


def _binary() -> Path:
    return tool("virtual-kubelet")


def _pod(name: str, secret: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": SERVING},
        "spec": {
            "nodeName": NODE,
            "tolerations": [TAINT | {"operator": "Equal"}],
            "containers": [
                {
                    "name": "serve",
                    "image": "registry.example/vllm:1",
                    "env": [
                        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": secret, "key": "token"}}}
                    ],
                }
            ],
        },
    }


def test_mock_virtual_kubelet_registers_and_runs_a_pod_with_its_secret(
    kube: Kube, control_plane: ControlPlane, tmp_path: Path
) -> None:
    binary = _binary()
    objects = environment_objects(REPO_ROOT, "staging")
    deployment = rendered(objects, "Deployment", NODE)
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"].endswith(f":{PINS['virtual-kubelet']}"), "the image runs the pinned version"
    with applied(kube, objects):
        suffix = uuid.uuid4().hex[:6]
        daemon: Daemon | None = None
        try:
            [(name, text)] = rendered(objects, "ConfigMap", NODE)["data"].items()
            (tmp_path / name).write_text(text, encoding="utf-8")
            args = with_flags(
                container["args"],
                {"--provider-config": str(tmp_path / name), "--metrics-addr": f"127.0.0.1:{free_port()}"},
            )
            certs = pki.generate(tmp_path / "pki")  # the kubelet API's serving pair (a Secret in-cluster)
            port = free_port()
            env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
            env |= {
                "KUBELET_PORT": str(port),
                "VKUBELET_POD_IP": "127.0.0.1",
                "PATH": os.environ["PATH"],
                "HOME": str(tmp_path),
                "APISERVER_CERT_LOCATION": str(certs.serving_cert),
                "APISERVER_KEY_LOCATION": str(certs.serving_key),
            }
            kubeconfig = service_account_kubeconfig(kube, control_plane, NODE, tmp_path / "kubeconfig")
            # The node-label policy must be observed before the node registers, or it misses it.
            wait_node_labelled(kube, NODE, {"type": "virtual-kubelet"}, {"trainyard.dev/provider": "mock"})
            daemon = Daemon(
                "vk-mock",
                [str(binary), *args, f"--kubeconfig={kubeconfig}"],
                tmp_path / "vk.log",
                ports=(port,),
                env=env,
            )
            daemon.start()
            daemon.wait_until(lambda: is_true(kube.get("v1", "Node", NODE), "Ready"), 120, "vk-mock Ready")
            node = kube.get("v1", "Node", NODE)
            assert node is not None
            assert node["status"]["allocatable"]["nvidia.com/gpu"] == GPUS
            assert node["metadata"]["labels"]["type"] == "virtual-kubelet"
            assert node["metadata"]["labels"]["trainyard.dev/provider"] == "mock"
            assert TAINT in node["spec"]["taints"]

            secret = f"token-{suffix}"
            kube.create(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": secret, "namespace": SERVING},
                    "stringData": {"token": "sesame"},
                }
            )
            kube.create(_pod(f"spill-{suffix}", secret))

            def running() -> bool:
                pod = kube.get("v1", "Pod", f"spill-{suffix}", SERVING) or {}
                return bool(pod.get("status", {}).get("phase") == "Running")

            daemon.wait_until(running, 90, "the spilled pod Running on vk-mock (its Secret resolved)")
        finally:
            if daemon is not None:
                daemon.stop()
            kube.delete("v1", "Pod", f"spill-{suffix}", SERVING)
            kube.delete("v1", "Node", NODE)
            kube.delete("coordination.k8s.io/v1", "Lease", NODE, "kube-node-lease")
