"""interLink 0.6.1's own virtual-kubelet (the program of prod's image, built by
tools/install.py from ../shared/src/interlink-0.6.1.tar.gz) against the test apiserver,
with every rendered object of prod applied, started as the rendered Deployment starts it:
its flags, the rendered InterLinkConfig.yaml, and the rendered ServiceAccount's own token
(a TokenRequest; so exactly the rendered RBAC and admission policies decide what it may do).

Shown, each by waiting on the real condition:
- its node vk-lambda registers with the provider's GPUs allocatable (prod.yaml: lambda,
  gpus 64, gpuModel A100-SXM4-80GB), Ready once the interLink API answers its ping, with
  the labels the rendered gate selects and both taints (interLink's own and the closed gate);
- the gate controller (gate/trainyard_gate, as its own ServiceAccount) opens and closes
  that node's gate taint as a real Prometheus' sample crosses the rendered thresholds;
- a pod spilled onto the node in an inference namespace (serving-prod) that reads a
  Secret (env from secretKeyRef, a secret volume) and a projected service-account token:
  the virtual-kubelet sends the interLink API the Secret's value in the container's env,
  the Secret in `secrets` and a minted token, and the pod turns Running from the API's
  status; all with the rendered grant, which reads Secrets only in the inference
  namespaces (shown refused elsewhere through SubjectAccessReview).
- the kubelet API (10250 in the Deployment) answers anyone: interLink 0.6.1 has no client
  authentication (cmd/virtual-kubelet/main.go:297-307, api.AttachPodRoutes :575), which is
  why the rendered NetworkPolicy admits only overflow.kubeletApiSourceCidrs.

Test substitutions (declared, nothing else changed): InterlinkURL becomes the unix socket of
the stand-in interLink API (tests/controlplane/interlink_standin.py, NOT interLink; interLink
refuses loopback URLs for pod calls, ../shared/src/interlink-0.6.1-NOTES.txt D), VKTokenFile
a file holding the stand-in's token, KUBELET_PORT a free port and POD_IP 127.0.0.1 (the
rendered env takes them from the pod); the gate's Prometheus URL, query and hold times as in
test_gate.py.

Not run here, pinned instead (the narrowest grant per provider, docs/overflow.md):
- mock: virtual-kubelet v1.14.1 node/nodeutil/controller.go:356-364 (one cluster-wide
  Secret/ConfigMap/Service informer factory), node/pod.go:76 (env resolved from those caches);
- azure-aci: virtual-kubelet/azure-aci v1.6.2 cmd/virtual-kubelet/main.go:213 (nodeutil.NewNode
  of virtual-kubelet v1.11.0, the same informers) and :319-321 (`--namespace` deprecated:
  "cannot set namespace, all namespaces watched"). Both therefore get get/list/watch on
  configmaps, secrets and services in their ClusterRole (checked on the rendered files in
  tests/overflow/test_provider_contracts.py).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import sys
import tempfile
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from box.daemon import Daemon, free_port
from box.kube import Kube, Obj, is_true, wait_for
from box.manifests import REPO_ROOT, environment_objects
from tests.controlplane.fixtures import applied, require_tools
from tests.controlplane.harness import ControlPlane
from tests.controlplane.interlink_standin import InterLinkStandIn
from tests.controlplane.overflow_scene import wait_node_labelled
from tests.controlplane.virtual_kubelets import NAMESPACE, rendered, service_account_kubeconfig, with_flags
from tests.gate.conftest import METRIC, Exporter, exporter, prometheus_url  # noqa: F401 (fixtures)
from tests.support import GATE_DIR

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

ENV = "prod"
PROVIDER = "lambda"  # prod's interLink provider
NODE = "vk-lambda"
GPUS = "64"  # environments/prod.yaml: overflow.providers[lambda].gpus
MODEL = "A100-SXM4-80GB"  # ... .gpuModel
INFERENCE_NAMESPACE = "serving-prod"  # overflow.inference[0].namespace
GATE_TAINT = {"key": "trainyard.dev/overflow-gate", "value": "closed", "effect": "NoSchedule"}
INTERLINK_TAINT = {"key": "virtual-node.interlink/no-schedule", "value": "true", "effect": "NoSchedule"}
HOLD_SECONDS = 2
# The first ping comes 30 s after start (virtualkubelet.go nodeUpdate :601-621); a cold
# start on two busy cores adds to it.
READY_SECONDS = 120
STEP_SECONDS = 90


def allowed(kube: Kube, account: str, verb: str, resource: str, namespace: str | None) -> bool:
    """The apiserver's own RBAC decision for the ServiceAccount (SubjectAccessReview)."""
    attributes: dict[str, Any] = {"verb": verb, "resource": resource}
    if namespace:
        attributes["namespace"] = namespace
    review = kube.create(
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "metadata": {},
            "spec": {
                "user": f"system:serviceaccount:{NAMESPACE}:{account}",
                "groups": [
                    "system:serviceaccounts",
                    f"system:serviceaccounts:{NAMESPACE}",
                    "system:authenticated",
                ],
                "resourceAttributes": attributes,
            },
        }
    )
    return bool(review["status"].get("allowed"))


@dataclass
class Scene:
    objects: list[Obj]
    vk: Daemon
    kubelet_port: int
    standin: InterLinkStandIn
    workdir: Path


@pytest.fixture
def scene(kube: Kube, control_plane: ControlPlane, tmp_path: Path) -> Iterator[Scene]:
    binary = require_tools("interlink-vk")["interlink-vk"]
    with applied(kube, environment_objects(REPO_ROOT, ENV)) as objects:
        # Unix socket paths are limited to 108 bytes; pytest's tmp_path can be longer.
        sockets = Path(tempfile.mkdtemp(prefix="il-"))
        api_token = f"interlink-api-{uuid.uuid4().hex}"
        standin = InterLinkStandIn(sockets / "interlink.sock", api_token)
        vk: Daemon | None = None
        try:
            # The MutatingAdmissionPolicy (closed gate taint on a new vk-<p>) takes a moment to
            # be served; a node registered before would start with its gate open.
            wait_node_labelled(
                kube,
                NODE,
                {"virtual-node.interlink/type": "virtual-kubelet"},
                {"trainyard.dev/provider": PROVIDER},
            )
            deployment = rendered(objects, "Deployment", NODE)
            [container] = deployment["spec"]["template"]["spec"]["containers"]
            config_map = rendered(objects, "ConfigMap", NODE)
            [(file_name, text)] = config_map["data"].items()
            config = yaml.safe_load(text)
            token_file = tmp_path / "interlink-api-token"
            token_file.write_text(api_token, encoding="utf-8")
            config.update({"InterlinkURL": standin.url, "VKTokenFile": str(token_file)})
            config_path = tmp_path / file_name
            config_path.write_text(yaml.safe_dump(config), encoding="utf-8")

            args = with_flags(container["args"], {"--configpath": str(config_path)})
            env = {e["name"]: e.get("value") for e in container["env"]}
            assert set(env) == {"KUBELET_PORT", "POD_IP"}, env  # what main.go reads (:222, :480)
            port = free_port()
            kubeconfig = service_account_kubeconfig(kube, control_plane, NODE, tmp_path / "vk.kubeconfig")
            env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": str(tmp_path),
                "KUBECONFIG": str(kubeconfig),
                "KUBELET_PORT": str(port),
                "POD_IP": "127.0.0.1",
                "KUBELET_URL": "127.0.0.1",
            }
            vk = Daemon(
                "interlink-vk",
                [str(binary), *args],
                tmp_path / "vk.log",
                ports=(port,),
                env=env,
                cwd=tmp_path,
            )
            vk.start()
            yield Scene(objects, vk, port, standin, tmp_path)
        finally:
            if vk is not None:
                vk.stop()
            standin.close()
            shutil.rmtree(sockets, ignore_errors=True)
            kube.delete("v1", "Node", NODE)
            kube.delete("coordination.k8s.io/v1", "Lease", NODE, "kube-node-lease")


def _node(kube: Kube) -> Obj | None:
    return kube.get("v1", "Node", NODE)


def _taints(node: Obj | None) -> list[dict[str, str]]:
    return list(((node or {}).get("spec") or {}).get("taints") or [])


def _gated(kube: Kube) -> bool:
    return any(
        t.get("key") == GATE_TAINT["key"]
        and t.get("value") == GATE_TAINT["value"]
        and t.get("effect") == GATE_TAINT["effect"]
        for t in _taints(_node(kube))
    )


def wait_registered_and_ready(kube: Kube, scene: Scene) -> Obj:
    """Until node vk-lambda is Ready (fails early with the log if the program exits)."""
    scene.vk.wait_until(lambda: is_true(_node(kube), "Ready"), READY_SECONDS, f"node {NODE} Ready")
    node = _node(kube)
    assert node is not None
    return node


def start_gate(
    kube: Kube, plane: ControlPlane, scene: Scene, prometheus: str
) -> tuple[Daemon, dict[str, Any]]:
    """The gate controller as its rendered Deployment runs it, as its own ServiceAccount,
    on the rendered TaintPolicy's lambda gate (test Prometheus, query and hold times)."""
    config_map = rendered(scene.objects, "ConfigMap", "overflow-gate-policy")
    policy = yaml.safe_load(config_map["data"]["policy.yaml"])
    spec = policy["spec"]
    spec["gates"] = [g for g in spec["gates"] if g["name"] == PROVIDER]
    spec["prometheus"]["url"] = prometheus
    spec["query"] = METRIC
    spec["reconcileIntervalSeconds"] = 1
    for gate in spec["gates"]:
        gate["closeAfterSeconds"] = gate["openAfterSeconds"] = HOLD_SECONDS
    policy_path = scene.workdir / "policy.yaml"
    policy_path.write_text(yaml.safe_dump(policy), encoding="utf-8")
    [container] = rendered(scene.objects, "Deployment", "overflow-gate")["spec"]["template"]["spec"][
        "containers"
    ]
    port = free_port()
    args = with_flags(container["args"], {"--policy": str(policy_path), "--metrics-port": str(port)})
    kubeconfig = service_account_kubeconfig(kube, plane, "overflow-gate", scene.workdir / "gate.kubeconfig")
    daemon = Daemon(
        "trainyard-gate",
        [
            sys.executable,
            "-m",
            "trainyard_gate",
            *args,
            f"--kubeconfig={kubeconfig}",
            "--metrics-address=127.0.0.1",
            "--node-resync-seconds=1",
        ],
        scene.workdir / "gate.log",
        ports=(port,),
        env={
            **os.environ,
            "PYTHONPATH": str(GATE_DIR),
            "POD_NAME": "overflow-gate-test",
            "POD_NAMESPACE": NAMESPACE,
        },
        cwd=GATE_DIR,
    )
    daemon.start()
    return daemon, spec["gates"][0]


def spilled_pod(name: str, secret: str, account: str) -> Obj:
    """An inference pod bound to the virtual node (the scheduler's job; none runs here) that
    reads a Secret twice and a projected service-account token."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": INFERENCE_NAMESPACE,
            "labels": {"app.kubernetes.io/name": "chat-api"},
        },
        "spec": {
            "nodeName": NODE,
            "serviceAccountName": account,
            "priorityClassName": "inference-prod",
            "tolerations": [{"key": INTERLINK_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [
                {
                    "name": "server",
                    "image": "registry.example/vllm:1",
                    "env": [
                        {
                            "name": "MODEL_TOKEN",
                            "valueFrom": {"secretKeyRef": {"name": secret, "key": "token"}},
                        }
                    ],
                    "volumeMounts": [
                        {"name": "weights-key", "mountPath": "/etc/weights"},
                        {"name": "api-token", "mountPath": "/var/run/secrets/api"},
                    ],
                    "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
                }
            ],
            "volumes": [
                {"name": "weights-key", "secret": {"secretName": secret}},
                {
                    "name": "api-token",
                    "projected": {
                        "sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}]
                    },
                },
            ],
        },
    }


def _assert_registered_as_the_gate_expects(node: Obj, scene: Scene) -> None:
    """GPUs from Resources.Accelerators, the labels the rendered selector matches, interLink's
    taint and the closed gate (admission policy)."""
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == GPUS
    assert node["status"]["capacity"]["nvidia.com/gpu"] == GPUS
    labels = node["metadata"]["labels"]
    gate_policy = yaml.safe_load(
        rendered(scene.objects, "ConfigMap", "overflow-gate-policy")["data"]["policy.yaml"]
    )
    [selector] = [
        g["nodeSelector"]["matchLabels"] for g in gate_policy["spec"]["gates"] if g["name"] == PROVIDER
    ]
    assert selector.items() <= labels.items(), (selector, labels)
    assert labels["virtual-node.interlink/type"] == "virtual-kubelet"
    assert labels["trainyard.dev/provider"] == PROVIDER and labels["nvidia-gpu-type"] == MODEL
    taints = _taints(node)
    assert INTERLINK_TAINT in taints and GATE_TAINT in taints, taints
    assert node["metadata"]["annotations"]["interlink.virtual-kubelet.io/ping-response"] == "stand-in"


def _spilled_pod_runs_with_its_secret(kube: Kube, scene: Scene) -> None:
    """A pod spilled onto the open virtual node gets its Secret, read where it runs."""
    suffix = uuid.uuid4().hex[:6]
    secret, account, pod = f"model-token-{suffix}", f"chat-api-{suffix}", f"chat-api-{suffix}"
    value = f"s3cr3t-{suffix}"
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": secret, "namespace": INFERENCE_NAMESPACE},
            "stringData": {"token": value},
        }
    )
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": account, "namespace": INFERENCE_NAMESPACE},
        }
    )
    kube.create(spilled_pod(pod, secret, account))
    try:

        def sent_to_interlink() -> list[Obj]:
            return [r for r in scene.standin.created() if r["pod"]["metadata"]["name"] == pod]

        [request] = wait_for(sent_to_interlink, STEP_SECONDS, f"{NODE} creating {pod} at interLink")
        [server] = request["pod"]["spec"]["containers"]
        assert {"name": "MODEL_TOKEN", "value": value} in server["env"], server["env"]
        [sent] = [s for s in request["secrets"] if s["metadata"]["name"] == secret]
        assert base64.b64decode(sent["data"]["token"]).decode() == value
        [projected] = [p for p in request["projectedvolumesmaps"] if p["metadata"]["name"] == "api-token"]
        assert projected["data"]["token"].count(".") == 2  # a JWT minted by TokenRequest
        assert all(call.authorized for call in scene.standin.calls())

        def running() -> Obj | None:
            found = kube.get("v1", "Pod", pod, INFERENCE_NAMESPACE)
            return found if (found or {}).get("status", {}).get("phase") == "Running" else None

        wait_for(running, STEP_SECONDS, f"{pod} Running from the interLink API's status")
    finally:
        kube.delete("v1", "Pod", pod, INFERENCE_NAMESPACE)


def _kubelet_api_answers_anyone(scene: Scene) -> None:
    """Anyone who reaches the kubelet API gets an answer: no client certificate, no token;
    its certificate is self-signed (DisableCSR, main.go:276-278: no CSR waiting for approval)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # self-signed (DisableCSR), CN system:node:vk-lambda
    with urllib.request.urlopen(
        f"https://127.0.0.1:{scene.kubelet_port}/runningpods/", timeout=30, context=context
    ) as response:
        assert response.status == 200
        body = json.loads(response.read())
    assert body["kind"] == "PodList"
    pem = ssl.get_server_certificate(("127.0.0.1", scene.kubelet_port))
    certificate = x509.load_pem_x509_certificate(pem.encode())
    assert certificate.subject == certificate.issuer
    [common_name] = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    assert common_name.value == f"system:node:{NODE}"


def test_interlink_virtual_kubelet_registers_is_gated_and_runs_a_pod_with_its_secret(
    scene: Scene,
    kube: Kube,
    control_plane: ControlPlane,
    prometheus_url: str,  # noqa: F811
    exporter: Exporter,  # noqa: F811
) -> None:
    _assert_registered_as_the_gate_expects(wait_registered_and_ready(kube, scene), scene)

    # The gate opens it when free in-cluster GPUs drop below M...
    gate, band = start_gate(kube, control_plane, scene, prometheus_url)
    try:
        exporter.set(float(band["openWhenFreeGpusBelow"] - 1))
        wait_for(lambda: not _gated(kube), STEP_SECONDS, "the gate to open vk-lambda")
        _spilled_pod_runs_with_its_secret(kube, scene)

        # The grant that made it work reads Secrets only where spilled pods run.
        assert allowed(kube, NODE, "get", "secrets", INFERENCE_NAMESPACE)
        assert not allowed(kube, NODE, "get", "secrets", NAMESPACE)
        assert not allowed(kube, NODE, "get", "secrets", "kube-system")
        assert not allowed(kube, NODE, "list", "secrets", None)

        # Plenty free again: the gate closes it.
        exporter.set(float(band["closeWhenFreeGpusAtLeast"]))
        wait_for(lambda: _gated(kube), STEP_SECONDS, "the gate to close vk-lambda")
        assert INTERLINK_TAINT in _taints(_node(kube))
        assert gate.running(), gate.log_tail()
    finally:
        gate.stop()

    _kubelet_api_answers_anyone(scene)
    assert scene.vk.running(), scene.vk.log_tail()
