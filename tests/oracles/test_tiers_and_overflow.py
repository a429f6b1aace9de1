"""Tiers, the training-priority admission policy, and the overflow bands of a small spec,
against literals worked out by hand from SPEC.

Tiers (SPEC): urgent 5000 and normal 4000 (training), serve 300 and batch 200 (inference,
batch with preemptionPolicy Never). So: the default training tier is the LOWEST training
tier, normal (4000); the descheduler evicts below 300 + 1 = 301; borrowing training may
preempt up to 300.

Providers (SPEC), fill order = preference, then cost, then name: bbb (100, $1.0), aaa
(100, $2.0), ccc (200, $0.5). Gate: close at >= 40 after 300 s, open below 12 after 30 s,
staggerOpenSeconds 90, no staggerFreeGpus, so the step is 12 // 3 providers = 4 GPUs:
  rank 0 bbb: close >= 40 after 300, open < 12 after 30
  rank 1 aaa: close >= 36 after 300, open <  8 after 120
  rank 2 ccc: close >= 32 after 300, open <  4 after 210
Affinity weights: in-cluster 100, then 50 x (3 - rank) // 3 = 50, 33, 16.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from generators.components.overflow.inference import inference_pod_snippet
from generators.model.environment import Environment
from tests.oracles.spec import Objects, environment, oracle_spec, rendered
from tests.support.overflow_spec import INFERENCE_POOL, SERVED_API, mock_provider

SPEC = oracle_spec(
    """\
pools:
  - name: train
    role: training
    gpu: {model: H100, perNode: 8}
    nodes: 4
    cpu: 96
    memory: 1000Gi
    nodeLabels: {pool: train}
"""
    + INFERENCE_POOL
    + """\
teams:
  - name: alpha
    namespaces: [alpha, alpha-eval]
    cohort: all
    shares: {train: 100}
  - name: web
    namespaces: [web]
    shares: {serve: 100}
  - name: scout
    namespaces: [scout]
    cohort: all
    shares: {serve: 0}
    borrowFrom: [train]
    maxUsagePercent: 50
cohorts:
  - name: all
priorities:
  tiers:
    - {name: urgent, role: training, value: 5000}
    - {name: normal, role: training, value: 4000}
    - {name: serve, role: inference, value: 300}
    - {name: batch, role: inference, value: 200, preemptionPolicy: Never}
overflow:
  providers:
"""
    + "".join(
        mock_provider(n, "L4", c, preference=p)
        for n, c, p in (("aaa", 2.0, 100), ("ccc", 0.5, 200), ("bbb", 1.0, 100))
    )
    + """\
  gate:
    prometheusUrl: http://prometheus:9090
    closeWhenFreeGpusAtLeast: 40
    closeAfterSeconds: 300
    openWhenFreeGpusBelow: 12
    openAfterSeconds: 30
    staggerOpenSeconds: 90
    image: {repository: ghcr.io/example/gate, tag: 0.1.0}
  migrateBack:
    maxPodsToEvictPerNode: 2
    maxPodsToEvictPerNamespace: 3
    maxPodsToEvictTotal: 5
  inference:
"""
    + SERVED_API
)


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> Objects:
    return rendered(tmp_path_factory.mktemp("oracle"), SPEC)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Environment:
    return environment(tmp_path_factory.mktemp("oracle-model"), SPEC)


def test_each_tier_renders_its_own_value_and_preemption_policy(objects: Objects) -> None:
    expected = {
        "urgent": (5000, "PreemptLowerPriority"),
        "normal": (4000, "PreemptLowerPriority"),
        "serve": (300, "PreemptLowerPriority"),
        "batch": (200, "Never"),
    }
    for name, (value, policy) in expected.items():
        pc, wpc = objects[("PriorityClass", name)], objects[("WorkloadPriorityClass", name)]
        assert (pc["value"], pc["preemptionPolicy"], pc["globalDefault"]) == (value, policy, False), name
        assert wpc["value"] == value, name  # one scale: Kueue takes a job's priority from either


def test_classless_training_pods_get_the_lowest_training_tier(objects: Objects) -> None:
    """The mutating policy sets class, value and preemption policy of `normal` together."""
    policy = objects[("MutatingAdmissionPolicy", "trainyard-training-priority")]
    [mutation] = policy["spec"]["mutations"]
    assert mutation["applyConfiguration"]["expression"] == (
        'Object{spec: Object.spec{priorityClassName: "normal", priority: 4000, '
        'preemptionPolicy: "PreemptLowerPriority"}}'
    )


def test_training_namespaces_are_the_teams_reaching_a_training_pool(objects: Objects) -> None:
    """alpha holds a share of train; scout only borrows it: both are training; web is not."""
    for kind in ("MutatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding"):
        binding = objects[(kind, "trainyard-training-priority")]
        [expression] = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
        assert expression["values"] == ["alpha", "alpha-eval", "scout"], kind
    validating = yaml.safe_dump(objects[("ValidatingAdmissionPolicy", "trainyard-training-priority")]["spec"])
    assert '["urgent", "normal"]' in validating, validating


def test_borrowing_training_preempts_only_up_to_the_highest_inference_tier(objects: Objects) -> None:
    preemption = objects[("ClusterQueue", "scout")]["spec"]["preemption"]
    assert preemption["borrowWithinCohort"] == {"policy": "LowerPriority", "maxPriorityThreshold": 300}


def _gates(objects: Objects) -> list[dict[str, Any]]:
    policy = yaml.safe_load(
        objects[("ConfigMap", "trainyard-system/overflow-gate-policy")]["data"]["policy.yaml"]
    )
    gates: list[dict[str, Any]] = policy["spec"]["gates"]
    return gates


def test_gate_bands_are_staggered_down_the_fill_order(objects: Objects) -> None:
    bands = [
        (
            g["name"],
            g["closeWhenFreeGpusAtLeast"],
            g["closeAfterSeconds"],
            g["openWhenFreeGpusBelow"],
            g["openAfterSeconds"],
        )
        for g in _gates(objects)
    ]
    assert bands == [("bbb", 40, 300, 12, 30), ("aaa", 36, 300, 8, 120), ("ccc", 32, 300, 4, 210)]


def test_gate_taint_is_noschedule_on_each_provider_node(objects: Objects) -> None:
    for gate in _gates(objects):
        taint = {"key": "trainyard.dev/overflow-gate", "value": "closed", "effect": "NoSchedule"}
        assert gate["taint"] == taint
        assert gate["nodeSelector"]["matchLabels"] == {
            "type": "virtual-kubelet",
            "trainyard.dev/provider": gate["name"],
        }


def test_inference_prefers_the_cluster_then_providers_in_fill_order(env: Environment) -> None:
    assert env.overflow is not None
    [service] = env.overflow.inference
    snippet = inference_pod_snippet(env.overflow, service)
    prefs = snippet["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    weights = [(p["weight"], p["preference"]["matchExpressions"]) for p in prefs]
    # In-cluster first: a node without the provider label (every virtual node gets one from
    # the rendered admission policy; `type NotIn virtual-kubelet` also matched interLink's).
    assert weights == [
        (100, [{"key": "trainyard.dev/provider", "operator": "DoesNotExist"}]),
        (50, [{"key": "trainyard.dev/provider", "operator": "In", "values": ["bbb"]}]),
        (33, [{"key": "trainyard.dev/provider", "operator": "In", "values": ["aaa"]}]),
        (16, [{"key": "trainyard.dev/provider", "operator": "In", "values": ["ccc"]}]),
    ]
    assert snippet["priorityClassName"] == "serve"


def test_migrate_back_policy(objects: Objects) -> None:
    policy = yaml.safe_load(objects[("ConfigMap", "trainyard-system/descheduler")]["data"]["policy.yaml"])
    assert (
        policy["maxNoOfPodsToEvictPerNode"],
        policy["maxNoOfPodsToEvictPerNamespace"],
        policy["maxNoOfPodsToEvictTotal"],
    ) == (2, 3, 5)
    assert "nodeSelector" not in policy  # descheduler skips a cycle when < 2 nodes match it
    [profile] = policy["profiles"]
    args = {c["name"]: c["args"] for c in profile["pluginConfig"]}
    assert args["DefaultEvictor"]["priorityThreshold"] == {"value": 301}  # highest inference 300 + 1
    assert args["DefaultEvictor"]["nodeFit"] is True
    assert args["DefaultEvictor"]["minPodAge"] == "10m"  # the schema default
    assert args["RemovePodsViolatingNodeTaints"] == {
        "includedTaints": ["trainyard.dev/overflow-gate"],
        "namespaces": {"include": ["web"]},
    }
