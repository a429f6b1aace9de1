"""The rendered admission policies' CEL, evaluated (cel-python) on sample pods and nodes.

Kubernetes' CEL adds library functions on top of the standard; these expressions use only
standard CEL (has, all, in, ?:, map/list literals), which cel-python evaluates the same way.
"""

from __future__ import annotations

from typing import Any

import celpy
import pytest
from celpy import celtypes
from celpy.adapter import json_to_cel

from generators.components.overflow.inference import inference_pod_snippet
from generators.k8s.objects import Obj
from generators.model.load import load
from tests.support import ROOT

from .conftest import one, overflow_envs

GATE = "trainyard.dev/overflow-gate"
LIFECYCLE = [
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]
PROVIDER = {"key": "virtual-kubelet.io/provider", "operator": "Exists", "effect": "NoSchedule"}


def _evaluate(expression: str, activation: dict[str, Any]) -> Any:
    """Compile and run `expression`; activation values are CEL values or plain JSON data."""
    env = celpy.Environment()
    program = env.program(env.compile(expression))
    return program.evaluate(
        {
            name: value if isinstance(value, celtypes.MapType) else json_to_cel(value)
            for name, value in activation.items()
        }
    )


def _admits(policy: Obj, pod: Obj) -> list[str]:
    """Messages of the validations that reject `pod` ([] means admitted)."""
    [variable] = policy["spec"]["variables"]
    variables = celtypes.MapType(
        {
            celtypes.StringType(variable["name"]): _evaluate(variable["expression"], {"object": pod}),
        }
    )
    return [
        rule["message"]
        for rule in policy["spec"]["validations"]
        if not bool(_evaluate(rule["expression"], {"object": pod, "variables": variables}))
    ]


def _pod(tolerations: list[Obj] | None) -> Obj:
    spec: Obj = {"containers": [{"name": "server", "image": "vllm:1"}]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


@pytest.fixture(params=overflow_envs())
def policy(request: pytest.FixtureRequest) -> Obj:
    env: str = request.param
    return one(env, "ValidatingAdmissionPolicy", "trainyard-inference-tolerations")


@pytest.mark.parametrize(
    "tolerations",
    [
        None,
        [],
        [PROVIDER],
        [PROVIDER, *LIFECYCLE],  # what the API server makes of the documented snippet
        [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        [{"key": "trainyard.dev/training", "operator": "Equal", "value": "true"}],
    ],
    ids=["none", "empty", "provider", "provider+lifecycle", "gpu", "other-key-any-effect"],
)
def test_admitted(policy: Obj, tolerations: list[Obj] | None) -> None:
    assert _admits(policy, _pod(tolerations)) == []


@pytest.mark.parametrize(
    ("tolerations", "reason"),
    [
        ([{"key": GATE, "operator": "Equal", "value": "closed", "effect": "NoSchedule"}], "overflow gate"),
        ([PROVIDER, {"key": GATE, "operator": "Exists"}], "overflow gate"),
        ([{"operator": "Exists"}], "no key"),
        ([{"key": "", "operator": "Exists", "effect": "NoSchedule"}], "no key"),
        ([{"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute"}], "NoExecute"),
        ([{"key": GATE, "operator": "Exists", "effect": "NoExecute"}], "NoExecute"),
    ],
    ids=["gate-equal", "gate-exists", "keyless-exists", "empty-key-exists", "noexecute", "gate-noexecute"],
)
def test_rejected(policy: Obj, tolerations: list[Obj], reason: str) -> None:
    messages = _admits(policy, _pod(tolerations))
    assert messages and any(reason in message for message in messages), messages


@pytest.mark.parametrize("env", overflow_envs())
def test_documented_snippet_is_admitted(env: str) -> None:
    ov = load(ROOT, env).overflow
    assert ov is not None
    policy = one(env, "ValidatingAdmissionPolicy", "trainyard-inference-tolerations")
    for svc in ov.inference:
        snippet = inference_pod_snippet(ov, svc)
        assert _admits(policy, _pod([*snippet["tolerations"], *LIFECYCLE])) == []


@pytest.mark.parametrize("env", overflow_envs())
def test_virtual_nodes_get_their_provider_label(env: str) -> None:
    ov = load(ROOT, env).overflow
    assert ov is not None
    policy = one(env, "MutatingAdmissionPolicy", "trainyard-virtual-node-labels")
    [condition] = policy["spec"]["matchConditions"]
    [variable] = policy["spec"]["variables"]
    for provider in ov.providers:
        node = {"metadata": {"name": provider.node_name, "labels": {"type": "virtual-kubelet"}}}
        assert _evaluate(condition["expression"], {"object": node}) is not False
        assert str(_evaluate(variable["expression"], {"object": node})) == provider.name
    for name in ("gpu-node-1", "vk-unknown", "vk"):
        assert not bool(_evaluate(condition["expression"], {"object": {"metadata": {"name": name}}}))
    mutation, taint = policy["spec"]["mutations"]
    assert mutation["patchType"] == "ApplyConfiguration"
    assert '"trainyard.dev/provider": variables.provider' in mutation["applyConfiguration"]["expression"]
    # The gate taint on CREATE is checked on the real apiserver (tests/gate/test_faults_controlplane.py):
    # JSONPatch and Object{} construction are Kubernetes CEL, not standard CEL.
    assert taint["patchType"] == "JSONPatch" and ov.gate.taint_key in taint["jsonPatch"]["expression"]
