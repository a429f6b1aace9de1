"""Prod's RENDERED free-GPU query on a real Prometheus, over a cluster shaped like prod.

The query string and the gate thresholds are read from
rendered/prod/overflow/trainyard-system/configmap-overflow-gate-policy.yaml (what the gate would
run), never rebuilt here. The data: every node of prod's pools at full scale (2 x 256 H100
nodes with their 2 x 8 reserve nodes, 64 L40S nodes), labelled and tainted as the pools
say, plus the two virtual nodes; backfilled into the pinned Prometheus with
`promtool tsdb create-blocks-from openmetrics`. The timeline (minutes):

    A  0-20   every quota-backing H100 node full, reserve nodes idle, every L40S node full
    B 20-40   8 L40S nodes freed (their pods Succeeded): 64 free
    C 40-60   of those 8: one cordoned, one NotReady, one with a NoSchedule and one with a
              NoExecute taint; one with a PreferNoSchedule taint, one with a 3-GPU pod
              bound and Pending, one quarantined by the health controller
              (trainyard.dev/gpu-health: inference tolerates it, so its GPUs still count)
    D 60-80   kube-state-metrics' `up` is 0 (its other series still there)
    E 80-100  no kube-state-metrics series at all (stale after the 5-min lookback)
    F 100-120 kube-state-metrics up, nodes exported, pod families missing (collector off)

Then the gate's own evaluator (gate/trainyard_gate) walks the same timeline every 30 s
with the rendered policy, its clock being the evaluation time.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from trainyard_gate.overflow.controller import GateEvaluator
from trainyard_gate.overflow.hysteresis import GateState
from trainyard_gate.overflow.metrics import GateMetrics
from trainyard_gate.overflow.policy import TaintPolicy, parse
from trainyard_gate.runtime.prometheus import QueryFailed, single_value

from generators.model.environment import Environment
from generators.model.load import load
from tests.gate import prod_shape
from tests.gate.prod_shape import Cluster, Value, node_names, reserve
from tests.monitoring.alert_cases import equality_matchers
from tests.support import ROOT, tool
from tests.support.prometheus import backfill_text, serve

pytestmark = pytest.mark.slow

POLICY = ROOT / "rendered/prod/overflow/trainyard-system/configmap-overflow-gate-policy.yaml"
GPU = "nvidia.com/gpu"
MINUTES = 120
A, B, C, D, E, F = 0, 20, 40, 60, 80, 100  # phase starts (minutes)
SERVING = "serving-prod"


def rendered_policy() -> TaintPolicy:
    config_map = yaml.safe_load(POLICY.read_text(encoding="utf-8"))
    return parse(config_map["data"]["policy.yaml"], str(POLICY.relative_to(ROOT)))


def between(start: float, end: float) -> Callable[[float], bool]:
    return lambda m: start <= m < end


def l40s_phase(node_index: int) -> Callable[[float], str]:
    """The inference pod on L40S node i: Running, except on the 8 nodes freed from B on."""
    freed = node_index < 8
    return lambda m: "Succeeded" if freed and m >= B else "Running"


def build(env: Environment) -> tuple[Cluster, dict[str, str]]:
    """The timeline's series and the role of the special L40S nodes."""
    ksm = equality_matchers(env.monitoring.selectors.kube_state_metrics)
    cluster = Cluster(ksm, MINUTES)
    l40s = env.pool("infer-l40s")
    nodes = node_names(l40s)
    role = {
        "cordoned": nodes[0],
        "not-ready": nodes[1],
        "no-schedule": nodes[2],
        "no-execute": nodes[3],
        "prefer-no-schedule": nodes[4],
        "pending-3": nodes[5],
        "quarantined": nodes[6],
    }  # node 7: plainly free
    from_c: Value = lambda m: 1 if m >= C else 0  # noqa: E731
    prod_shape.add_pools(
        cluster,
        env,
        ready={role["not-ready"]: lambda m: 0 if m >= C else 1},
        cordoned={role["cordoned"]: from_c},
    )
    cluster.taint(role["no-schedule"], "nvidia.com/gpu.unhealthy", "NoSchedule", "true", from_minute=C)
    cluster.taint(
        role["no-execute"], "node.kubernetes.io/out-of-service", "NoExecute", "nodeshutdown", from_minute=C
    )
    cluster.taint(
        role["prefer-no-schedule"], "trainyard.dev/draining-soon", "PreferNoSchedule", from_minute=C
    )
    cluster.taint(
        role["quarantined"], "trainyard.dev/gpu-health", "NoSchedule", "gpu-temperature", from_minute=C
    )
    for pool in env.pools:
        if pool.role == "training":  # quota-backing nodes full, reserve idle
            busy = [n for n in node_names(pool) if n not in reserve(pool)]
            for n in busy:
                cluster.pod(
                    "foundation", f"train-{n}", n, pool.gpu_resource, pool.gpus_per_node, lambda m: "Running"
                )
    for i, n in enumerate(nodes):
        cluster.pod(SERVING, f"chat-{n}", n, GPU, l40s.gpus_per_node, l40s_phase(i))
    cluster.pod(
        SERVING, "chat-starting", role["pending-3"], GPU, 3, lambda m: "Pending" if m >= C else "Succeeded"
    )
    cluster.pod(SERVING, "chat-unbound", "", GPU, 8, lambda m: "Pending")  # holds nothing
    assert env.overflow is not None
    for provider in env.overflow.providers:  # idle capacity out there is not in-cluster
        cluster.node(provider.node_name, provider.node_labels, provider.gpu_resource, provider.gpus)
        cluster.taint(provider.node_name, "virtual-kubelet.io/provider", "NoSchedule", provider.type)
        cluster.pod(SERVING, f"spill-{provider.name}", provider.node_name, GPU, 4, lambda m: "Running")
    cluster.add("up", {"instance": "kube-state-metrics:8080"}, lambda m: 0 if D <= m < E else 1)
    return cluster, role


def present(name: str, minute: float) -> bool:
    """E: kube-state-metrics not scraped at all; F: back, but without its pod families."""
    if E <= minute < F:
        return False
    return not (minute >= F and name.startswith("kube_pod_"))


@pytest.fixture(scope="module")
def prod() -> Environment:
    return load(ROOT, "prod")


@pytest.fixture(scope="module")
def prometheus(prod: Environment, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    promtool, server_binary = tool("promtool"), tool("prometheus")
    work = tmp_path_factory.mktemp("prod-shape")
    cluster, _ = build(prod)
    backfill_text(promtool, work, cluster.openmetrics(present))
    with serve(server_binary, work) as url:
        yield url


def instant(url: str, expr: str, minute: float) -> dict[str, Any]:
    """The /api/v1/query response body for `expr` at `minute` of the timeline."""
    at = prod_shape.START + minute * 60
    params = urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
    with urllib.request.urlopen(f"{url}/api/v1/query?{params}", timeout=60) as response:
        body: dict[str, Any] = json.load(response)
    assert body["status"] == "success", body
    return body


def samples(url: str, expr: str, minute: float) -> list[float]:
    return [float(r["value"][1]) for r in instant(url, expr, minute)["data"]["result"]]


def test_the_rendered_query_is_the_models(prod: Environment) -> None:
    assert prod.overflow is not None
    assert rendered_policy().query == prod.overflow.gate.free_gpus_query


@pytest.mark.parametrize(
    ("minute", "expected", "why"),
    [
        (B - 1, 0.0, "inference pool full; 2 x 8 idle H100 reserve nodes, idle virtual nodes: not counted"),
        (C - 1, 64.0, "8 L40S nodes freed"),
        (
            D - 1,
            29.0,
            "of the 8: cordoned, NotReady, NoSchedule, NoExecute do not count; "
            "PreferNoSchedule does; 3 of 8 held by a bound Pending pod; the quarantined "
            "node does (inference tolerates gpu-health): 8 + 5 + 8 + 8",
        ),
    ],
)
def test_counts_only_gpus_inference_can_use(
    prometheus: str, minute: float, expected: float, why: str
) -> None:
    policy = rendered_policy()
    assert samples(prometheus, policy.query, minute) == [expected], why


def test_the_gate_would_open_then_close(prometheus: str) -> None:
    """Against the rendered thresholds: full -> below every open line; freed -> at every close line."""
    policy = rendered_policy()
    [full] = samples(prometheus, policy.query, B - 1)
    [freed] = samples(prometheus, policy.query, C - 1)
    for gate in policy.gates:
        assert full < gate.thresholds.open_when_free_gpus_below, gate
        assert freed >= gate.thresholds.close_when_free_gpus_at_least, gate


@pytest.mark.parametrize(
    ("minute", "data_there", "why"),
    [
        (E - 1, 'count(kube_node_status_allocatable{job="kube-state-metrics"})', "up == 0"),
        (F - 1, 'count(last_over_time(up{job="kube-state-metrics"}[30m]))', "stale: last scraped 22 min ago"),
        (
            MINUTES - 1,
            'sum(kube_node_status_allocatable{job="kube-state-metrics", '
            'resource="nvidia_com_gpu", node=~"infer-l40s-.*"})',
            "pod families missing",
        ),
    ],
)
def test_missing_or_stale_inputs_give_no_series(
    prometheus: str, minute: float, data_there: str, why: str
) -> None:
    """No sample, so the gate's onPrometheusUnavailable applies; never a number."""
    assert instant(prometheus, rendered_policy().query, minute)["data"]["result"] == [], why
    # The query is what is empty, not the data: what the case relies on is there.
    assert samples(prometheus, data_there, minute), data_there


def test_the_gate_evaluator_walks_the_timeline(prometheus: str) -> None:
    """The controller's own evaluator, rendered policy, one observation per 30 s of data."""
    policy = rendered_policy()
    minute = 0.0

    def query() -> float:
        return single_value(instant(prometheus, policy.query, minute))

    names = [g.name for g in policy.gates]
    evaluator = GateEvaluator(
        policy,
        query,
        GateMetrics(names),
        dict.fromkeys(names, GateState.CLOSED),
        clock=lambda: minute * 60,
        wall_clock=lambda: minute * 60,
    )
    changes: list[tuple[float, str, str]] = []
    errors: dict[float, str] = {}
    while minute < MINUTES:
        observation = evaluator.observe()
        changes += [(minute, g, d.state.value) for g, d in observation.decisions.items() if d.changed]
        if observation.error:
            errors[minute] = observation.error
        minute += policy.reconcile_interval_seconds / 60
    bands = {g.name: g.thresholds for g in policy.gates}
    opened = {g: m for m, g, s in changes if s == "open"}
    closed = {g: m for m, g, s in changes if s == "closed"}
    assert len(changes) == 2 * len(names), changes  # each gate opens once and closes once
    step = policy.reconcile_interval_seconds
    for name, band in bands.items():
        # A: 0 free from the first sample; the gate opens once that held openAfterSeconds.
        assert opened[name] * 60 == pytest.approx(band.open_after_seconds, abs=step)
        # B: 64 free from minute 20; closes after closeAfterSeconds at >= its close line.
        assert (closed[name] - B) * 60 == pytest.approx(band.close_after_seconds, abs=step)
        assert evaluator.state(name) is GateState.CLOSED  # held through D, E, F (hold)
    assert policy.on_prometheus_unavailable.value == "hold"
    # Every observation from D on found no sample; none before D failed.
    assert min(errors) >= D and all("0 series" in e for e in errors.values()), errors
    assert len(errors) == (MINUTES - D) * 60 // policy.reconcile_interval_seconds


def test_a_query_failure_is_queryfailed() -> None:
    """single_value, the gate's parser used above, refuses an empty vector (can fail)."""
    with pytest.raises(QueryFailed, match="0 series"):
        single_value({"status": "success", "data": {"resultType": "vector", "result": []}})
