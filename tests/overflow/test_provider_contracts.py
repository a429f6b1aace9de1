"""Per provider type: the rendered Deployment and config file match what that program
really parses (flags, config keys and format, file paths, node taint, GPU capacity), as
cited in generators/providers/<type>.py. Rendered through the real CLI from a scratch
environment with one provider of each type, plus the shipped environments as rendered."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import yaml

from generators.k8s.objects import Obj
from generators.model.load import load
from generators.providers import CONTRACTS, PROVIDER_TAINT_KEYS
from generators.providers.contract import CONFIG_DIR, CREDENTIALS_DIR, SERVING_DIR
from tests.support import ROOT
from tests.support.overflow_spec import BASE
from tests.support.scratch import repo_with, run_cli

# One provider of each type, as an environment owner would write it.
PROVIDERS = {
    "mock": ('config: {cpu: "8", memory: 64Gi, pods: "110"}', 8),
    "interlink": ('config: {InterlinkURL: https://il.example.com, InterlinkPort: "443"}', 16),
    "azure-aci": ("config: {region: eastus, resourceGroup: overflow}", 4),
}


def _environment_with(kind: str) -> str:
    config, gpus = PROVIDERS[kind]
    old = 'config: {cpu: "8", memory: 64Gi, pods: "110"}\n      gpus: 8'
    assert old in BASE
    return BASE.replace("type: mock", f"type: {kind}", 1).replace(old, f"{config}\n      gpus: {gpus}", 1)


@pytest.fixture(scope="module", params=sorted(PROVIDERS))
def rendered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    kind: str = request.param
    root = repo_with(tmp_path_factory.mktemp(kind), _environment_with(kind))
    code, out, err = run_cli(root, "render", "bad")
    assert code == 0, out + err
    return kind, root / "rendered" / "bad" / "overflow" / "trainyard-system"


def _one(folder: Path, name: str) -> Obj:
    document: Obj = yaml.safe_load((folder / name).read_text(encoding="utf-8"))
    return document


def test_the_deployment_and_config_match_the_providers_program(rendered: tuple[str, Path]) -> None:
    kind, folder = rendered
    contract = CONTRACTS[kind]
    gpus = PROVIDERS[kind][1]
    deployment = _one(folder, "deployment-vk-cheap.yaml")
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    flags = {arg.split("=", 1)[0] for arg in container["args"]}
    assert flags <= contract.flags, f"{kind} does not parse {flags - contract.flags}"
    assert "--nodename" in flags
    env = {e["name"]: e for e in container["env"]}
    assert not any("secretKeyRef" in json.dumps(e) for e in env.values()), "credentials must be files"
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[mounts[CREDENTIALS_DIR]]["secret"]["secretName"] == "cheap"
    [data] = [_one(folder, "configmap-vk-cheap.yaml")["data"]]
    [(name, text)] = data.items()
    assert volumes[mounts[CONFIG_DIR]]["configMap"]["name"] == "vk-cheap"
    config_path = f"{CONFIG_DIR}/{name}"
    node = contract.taint
    ports = {p["containerPort"] for p in container["ports"]}
    assert 10250 in ports and (contract.metrics_port is None or contract.metrics_port in ports)
    assert (SERVING_DIR in mounts) == contract.needs_serving_certificate
    if contract.needs_serving_certificate:  # node-cli and azure-aci exit without the key pair
        assert "optional" not in volumes[mounts[SERVING_DIR]]["secret"]

    if kind == "mock":
        # "linux", never "Linux": root.go:59 refuses it (provider/types.go:5), run at v1.14.1.
        assert {f"--provider-config={config_path}", "--provider=mock", "--os=linux"} <= set(container["args"])
        parsed = json.loads(text)  # map from node name to MockConfig
        assert set(parsed) == {"vk-cheap"} and set(parsed["vk-cheap"]) <= contract.config_keys
        assert parsed["vk-cheap"]["others"]["nvidia.com/gpu"] == str(gpus)
        assert (env["VKUBELET_TAINT_KEY"]["value"], env["VKUBELET_TAINT_VALUE"]["value"]) == (
            "virtual-kubelet.io/provider",
            "mock",
        )
        assert env["APISERVER_CERT_LOCATION"]["value"] == f"{SERVING_DIR}/tls.crt"
    elif kind == "interlink":
        assert f"--configpath={config_path}" in container["args"]
        parsed = yaml.safe_load(text)
        assert set(parsed) <= contract.config_keys
        # interLink 0.6.1 counts GPUs only from Resources.Accelerators (virtualkubelet.go:326-369).
        assert parsed["Resources"] == {
            "Accelerators": [{"ResourceType": "nvidia.com/gpu", "Model": "L4", "Available": str(gpus)}]
        }
        assert parsed["NodeLabels"] == ["trainyard.dev/provider=cheap"]
        assert parsed["DisableCSR"] is True and parsed["SkipDownwardAPIResolution"] is True
        assert parsed["InterlinkURL"] == "https://il.example.com" and parsed["InterlinkPort"] == "443"
        assert parsed["VKTokenFile"] == f"{CREDENTIALS_DIR}/token"
        assert env["KUBELET_PORT"]["value"] == "10250" and "POD_IP" in env  # main.go reads both
        assert node(None).key == "virtual-node.interlink/no-schedule"  # type: ignore[arg-type]
    else:
        assert f"--provider-config={config_path}" in container["args"]
        parsed = tomllib.loads(text)
        assert parsed == {"Region": "eastus", "ResourceGroup": "overflow"}
        assert env["AZURE_AUTH_LOCATION"]["value"] == f"{CREDENTIALS_DIR}/token"
        assert "AZURE_AUTH_LOCATION_JSON" not in env
        assert (env["VKUBELET_TAINT_KEY"]["value"], env["VKUBELET_TAINT_VALUE"]["value"]) == (
            "virtual-kubelet.io/provider",
            "azure",
        )
    # What the node will advertise, stated on the Deployment for cost reports.
    advertised = deployment["metadata"]["annotations"]["trainyard.dev/gpus-advertised"]
    assert advertised == str(gpus if kind != "azure-aci" else 0)


def test_inference_tolerates_each_shipped_providers_real_taint() -> None:
    from generators.components.overflow.inference import inference_pod_snippet

    for env in ("prod", "staging"):
        ov = load(ROOT, env).overflow
        assert ov is not None
        tolerated = {t["key"] for t in inference_pod_snippet(ov, ov.inference[0])["tolerations"]}
        assert tolerated == {p.node_taint.key for p in ov.providers} and tolerated <= set(PROVIDER_TAINT_KEYS)
    prod = load(ROOT, "prod").overflow
    assert prod is not None
    assert {p.type: p.node_taint.key for p in prod.providers} == {
        "interlink": "virtual-node.interlink/no-schedule",
        "azure-aci": "virtual-kubelet.io/provider",
    }


def test_unknown_provider_type_is_refused_with_the_supported_ones(tmp_path: Path) -> None:
    root = repo_with(tmp_path, BASE.replace("type: mock", "type: azure", 1))
    code, out, err = run_cli(root, "render", "bad")
    lines = [line for line in (out + err).splitlines() if "error:" in line]
    assert code == 1 and len(lines) == 1, out + err
    line = lines[0]
    column = next(text for text in BASE.splitlines() if "type: mock" in text).index("mock") + 1
    assert line.startswith("environments/bad.yaml:")
    assert f":{column}: error: unknown provider type 'azure'" in line
    assert "supported: azure-aci, interlink, mock" in line and "did you mean 'azure-aci'" in line


def test_a_key_the_contract_sets_is_refused(tmp_path: Path) -> None:
    port = 'InterlinkPort: "443"'
    text = _environment_with("interlink").replace(port + "}", port + ", VKTokenFile: /x}")
    code, out, err = run_cli(repo_with(tmp_path, text), "render", "bad")
    assert code == 1 and "'VKTokenFile' is set by the interlink contract" in out + err


def _refusal(tmp_path: Path, text: str) -> str:
    """The one error line of rendering `text` (fails unless exactly one, with exit code 1)."""
    code, out, err = run_cli(repo_with(tmp_path, text), "render", "bad")
    lines = [line for line in (out + err).splitlines() if "error:" in line]
    assert code == 1 and len(lines) == 1, out + err
    assert not (tmp_path / "rendered" / "bad").exists()  # nothing written
    return lines[0]


def _column(text: str, key: str) -> tuple[int, int]:
    """1-based line and column of the value of the first `key:` in the overflow section of
    `text` (errors point at the offending value)."""
    start = text.index("overflow:")
    for number, line in enumerate(text.splitlines(), 1):
        offset = sum(len(earlier) + 1 for earlier in text.splitlines()[: number - 1])
        plain = line.replace(f'"{key}":', f" {key}: ")  # same width as the quoted key
        if offset >= start and f"{key}:" in plain:
            after = plain.index(f"{key}:") + len(key) + 1
            return number, after + len(plain[after:]) - len(plain[after:].lstrip()) + 1
    raise AssertionError(key)


INTERLINK_CONFIG = 'config: {InterlinkURL: https://il.example.com, InterlinkPort: "443"}'


@pytest.mark.parametrize(
    ("config", "needle", "message"),
    [
        # yaml.v2 matches tags exactly: the mis-cased key would be ignored and the URL empty.
        (
            'config: {InterLinkURL: https://il.example.com, InterlinkPort: "443"}',
            "InterLinkURL",
            "interlink reads no config key 'InterLinkURL'",
        ),
        (
            'config: {InterlinkURL: https://il.example.com, CPU: "8"}',
            "CPU",
            "interlink reads no config key 'CPU'",
        ),  # 0.3.0's top-level key; 0.6.1 reads Resources.CPU
        (
            'config: {InterlinkURL: https://il.example.com, "nvidia.com/gpu": "8"}',
            "nvidia.com/gpu",
            "interlink reads no config key 'nvidia.com/gpu'",
        ),
        (
            "config: {InterlinkURL: https://il.example.com, Resources: {Accelerators: []}}",
            "Accelerators",
            "Resources.Accelerators is set by the interlink contract",
        ),
        (
            "config: {InterlinkURL: https://il.example.com, Resources: {cpu: '8'}}",
            "cpu",
            "interlink reads no Resources key 'cpu'",
        ),
        (
            "config: {InterlinkURL: https://il.example.com, DisableCSR: false}",
            "DisableCSR",
            "'DisableCSR' is set by the interlink contract",
        ),
        (
            "config: {InterlinkURL: https://il.example.com, KubeletCertFile: /x}",
            "KubeletCertFile",
            "'KubeletCertFile' is not supported: the interlink contract serves the kubelet API with a "
            "self-signed",
        ),
        (
            "config: {InterlinkURL: https://il.example.com, NodeLabels: [a=b]}",
            "NodeLabels",
            "'NodeLabels' is set by the interlink contract",
        ),
        (
            "config: {InterlinkURL: http://127.0.0.1, InterlinkPort: '3000'}",
            "InterlinkURL",
            "interLink refuses pod calls to '127.0.0.1' as SSRF",
        ),
    ],
)
def test_interlink_config_keys_are_those_0_6_1_reads(
    tmp_path: Path, config: str, needle: str, message: str
) -> None:
    text = _environment_with("interlink").replace(INTERLINK_CONFIG, config, 1)
    assert config in text
    line = _refusal(tmp_path, text)
    row, column = _column(text, needle)
    assert line.startswith(f"environments/bad.yaml:{row}:{column}: error: {message}"), line
    if needle == "InterLinkURL":
        assert "did you mean 'InterlinkURL'" in line


def test_interlink_accepts_resources_cpu_memory_pods(tmp_path: Path) -> None:
    config = (
        'config: {InterlinkURL: https://il.example.com, Resources: {CPU: "64", Memory: 512Gi, Pods: "200"}}'
    )
    root = repo_with(tmp_path, _environment_with("interlink").replace(INTERLINK_CONFIG, config, 1))
    code, out, err = run_cli(root, "render", "bad")
    assert code == 0, out + err
    folder = root / "rendered" / "bad" / "overflow" / "trainyard-system"
    parsed = yaml.safe_load(next(iter(_one(folder, "configmap-vk-cheap.yaml")["data"].values())))
    assert parsed["Resources"] == {
        "CPU": "64",
        "Memory": "512Gi",
        "Pods": "200",
        "Accelerators": [{"ResourceType": "nvidia.com/gpu", "Model": "L4", "Available": "16"}],
    }


@pytest.mark.parametrize(
    ("field", "written", "message"),
    [
        (
            "gpuResource",
            "gpuResource: example.com/gpu",
            "interLink 0.6.1 advertises no 'example.com/gpu' capacity",
        ),
        ("gpuModel", "gpuModel: L4 PCIe", "gpuModel 'L4 PCIe' is not a valid label value"),
    ],
)
def test_interlink_refuses_gpus_it_would_not_advertise(
    tmp_path: Path, field: str, written: str, message: str
) -> None:
    text = _environment_with("interlink").replace(
        "gpuModel: L4", "gpuModel: L4\n      " + written if field == "gpuResource" else written, 1
    )
    line = _refusal(tmp_path, text)
    row, column = _column(text, field)
    assert line.startswith(f"environments/bad.yaml:{row}:{column}: error: {message}"), line


def test_kubelet_api_is_admitted_only_from_the_listed_cidrs(tmp_path: Path) -> None:
    text = _environment_with("interlink").replace(
        "  gate:\n", "  kubeletApiSourceCidrs: [10.0.0.0/28, 192.168.10.4/32]\n  gate:\n", 1
    )
    root = repo_with(tmp_path, text)
    code, out, err = run_cli(root, "render", "bad")
    assert code == 0, out + err
    policy = _one(
        root / "rendered" / "bad" / "overflow" / "trainyard-system", "networkpolicy-virtual-kubelet-api.yaml"
    )
    assert policy["spec"]["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "virtual-kubelet"}}
    assert policy["spec"]["ingress"] == [
        {
            "from": [{"ipBlock": {"cidr": "10.0.0.0/28"}}, {"ipBlock": {"cidr": "192.168.10.4/32"}}],
            "ports": [{"protocol": "TCP", "port": 10250}],
        }
    ]


@pytest.mark.parametrize(
    ("env", "node", "cluster_wide"),
    [("prod", "vk-lambda", False), ("prod", "vk-azure", True), ("staging", "vk-mock", True)],
)
def test_pod_inputs_are_granted_where_each_program_reads_them(
    env: str, node: str, cluster_wide: bool
) -> None:
    """interLink 0.6.1 GETs a spilled pod's Secrets and ConfigMaps in its namespace
    (pkg/virtualkubelet/execute.go:856 :891 :980 :997, with SkipDownwardAPIResolution): a
    RoleBinding per inference namespace. node-cli (mock) and azure-aci resolve them from
    cluster-wide informers (virtual-kubelet v1.14.1 node/nodeutil/controller.go:356-364,
    node/pod.go:76; azure-aci v1.6.2 cmd/virtual-kubelet/main.go:213, :319-321): their
    ClusterRole must hold them, or the caches stay empty and such pods fail."""
    folder = ROOT / "rendered" / env / "overflow"
    cluster_role = yaml.safe_load((folder / f"clusterrole-trainyard-{node}.yaml").read_text(encoding="utf-8"))
    reads = [r for r in cluster_role["rules"] if "secrets" in r["resources"]]
    bindings = sorted(p.parent.name for p in folder.glob(f"*/rolebinding-trainyard-{node}-pod-inputs.yaml"))
    if cluster_wide:
        assert (
            reads
            == [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps", "secrets", "services"],
                    "verbs": ["get", "list", "watch"],
                }
            ]
            and not bindings
        )
    else:
        assert not reads
        assert bindings == ["batch-inference", "serving-prod"]  # prod.yaml's inference namespaces
        inputs = yaml.safe_load((folder / f"clusterrole-trainyard-{node}-pod-inputs.yaml").read_text())
        assert inputs["rules"] == [
            {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["serviceaccounts/token"], "verbs": ["create"]},
        ]
        # RetrievePodsFromCluster lists namespaces before the status loop starts (virtualkubelet.go:2123).
        assert {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]} in cluster_role["rules"]


def test_a_kubelet_api_source_that_is_not_a_cidr_is_refused(tmp_path: Path) -> None:
    text = _environment_with("interlink").replace(
        "  gate:\n", "  kubeletApiSourceCidrs: [10.0.0.0/33]\n  gate:\n", 1
    )
    line = _refusal(tmp_path, text)
    row, column = _column(text, "kubeletApiSourceCidrs")
    assert line.startswith(f"environments/bad.yaml:{row}:{column + 1}: error: "), line  # at the item
    assert "overflow.kubeletApiSourceCidrs[0]" in line, line
