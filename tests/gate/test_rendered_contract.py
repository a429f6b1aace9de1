"""The contract between the overflow generator and the gate controller, on committed output.

Every TaintPolicy the generator renders must load in the controller, and every Deployment
running the gate image must pass flags the controller accepts, mount the policy where
--policy points, and expose the port --metrics-port serves.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from trainyard_gate.main import parse_args
from trainyard_gate.overflow.policy import parse

from tests.support import ROOT

RENDERED = ROOT / "rendered"


def _objects(pattern: str, marker: str) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(RENDERED.glob(pattern)):
        text = path.read_text(encoding="utf-8")
        if marker in text:
            found.extend(
                (str(path.relative_to(ROOT)), doc)
                for doc in yaml.safe_load_all(text)
                if isinstance(doc, dict)
            )
    return found


POLICIES = [
    (name, doc)
    for name, doc in _objects("**/*.yaml", "kind: TaintPolicy")
    if doc.get("kind") == "ConfigMap" and "policy.yaml" in doc.get("data", {})
]
# The health controller (docs/health.md) is the same program with a NodeHealthPolicy.
HEALTH_POLICIES = [
    (name, doc)
    for name, doc in _objects("**/*.yaml", "kind: NodeHealthPolicy")
    if doc.get("kind") == "ConfigMap" and "policy.yaml" in doc.get("data", {})
]
# The contract's example (docs/health.md, "The contract with the controller"): the doc is
# where the contract lives, so its keys are read from there, not copied.
_CONTRACT = ROOT / "docs" / "health.md"
_CONTRACT_TEXT = _CONTRACT.read_text(encoding="utf-8")
_CONTRACT_YAML = re.search(
    r"```yaml\n(.*?)```",
    _CONTRACT_TEXT[_CONTRACT_TEXT.index("### The contract with the controller") :],
    re.DOTALL,
)
assert _CONTRACT_YAML is not None, f"{_CONTRACT}: no YAML example under 'The contract with the controller'"
HEALTH_SPEC_KEYS = set(yaml.safe_load(_CONTRACT_YAML.group(1))["spec"])
GATE_DEPLOYMENTS = [
    (name, doc) for name, doc in _objects("**/*.yaml", "trainyard-gate") if doc.get("kind") == "Deployment"
]


def test_the_generator_renders_gate_policies_and_deployments() -> None:
    assert POLICIES, "no ConfigMap with a TaintPolicy under rendered/"
    assert GATE_DEPLOYMENTS, "no Deployment running the trainyard-gate image under rendered/"


@pytest.mark.parametrize(("path", "configmap"), POLICIES, ids=[name for name, _ in POLICIES])
def test_rendered_policy_loads(path: str, configmap: dict[str, Any]) -> None:
    policy = parse(configmap["data"]["policy.yaml"], f"{path}#policy.yaml")
    assert policy.gates
    assert all(gate.taint.effect == "NoSchedule" for gate in policy.gates)


@pytest.mark.parametrize(("path", "deployment"), GATE_DEPLOYMENTS, ids=[name for name, _ in GATE_DEPLOYMENTS])
def test_rendered_deployment_matches_the_cli(path: str, deployment: dict[str, Any]) -> None:
    pod = deployment["spec"]["template"]["spec"]
    [container] = [c for c in pod["containers"] if "trainyard-gate" in c.get("image", "")]
    args = parse_args([*container.get("command", [])[1:], *container.get("args", [])])
    mounts = {m["mountPath"].rstrip("/"): m["name"] for m in container.get("volumeMounts", [])}
    volume = mounts.get(str(args.policy.parent))
    assert volume, f"--policy {args.policy} is not under any volumeMount of {path}"
    [source] = [v for v in pod.get("volumes", []) if v["name"] == volume]
    configmap = source["configMap"]["name"]
    namespace = deployment["metadata"].get("namespace")
    assert any(
        doc["metadata"]["name"] == configmap and doc["metadata"].get("namespace") == namespace
        for _, doc in POLICIES + HEALTH_POLICIES
    ), f"{path} mounts ConfigMap {configmap}, which holds no TaintPolicy or NodeHealthPolicy"
    if args.metrics_port:
        ports = [p["containerPort"] for p in container.get("ports", [])]
        assert args.metrics_port in ports, f"--metrics-port {args.metrics_port} not exposed"


@pytest.mark.parametrize(("path", "configmap"), HEALTH_POLICIES, ids=[name for name, _ in HEALTH_POLICIES])
def test_rendered_health_policy_has_the_contracts_shape(path: str, configmap: dict[str, Any]) -> None:
    policy = yaml.safe_load(configmap["data"]["policy.yaml"])
    assert policy["apiVersion"] == "trainyard.dev/v1alpha1" and policy["kind"] == "NodeHealthPolicy"
    spec = policy["spec"]
    assert set(spec) == HEALTH_SPEC_KEYS, path
    assert spec["taint"] == {"key": "trainyard.dev/gpu-health", "effect": "NoSchedule"}
    assert spec["onPrometheusUnavailable"] == "hold"
    reasons = [c["reason"] for c in spec["conditions"]]
    assert len(set(reasons)) == len(reasons) and all(len(r) <= 63 for r in reasons)
    assert all(set(c) == {"reason", "query", "quarantineAfterSeconds"} for c in spec["conditions"])
    assert all(
        set(p) == {"name", "nodeSelector"} and "trainyard.dev/pool" in p["nodeSelector"]["matchLabels"]
        for p in spec["pools"]
    )
    assert set(spec["cap"]) == {"maxNodes", "maxPercentOfPool"}
