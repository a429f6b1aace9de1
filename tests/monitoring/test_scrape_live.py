"""The rendered queries against a REAL scrape: kube-state-metrics and node_exporter scraped by
Prometheus with the relabeling kube-prometheus-stack renders.

Per environment that renders both the overflow gate and the health controller (staging,
prod): `helm template` of the pinned kube-prometheus-stack 88.5.3 with
rendered/<env>/installers/kube-prometheus-stack-values.yaml gives the kube-state-metrics
Deployment (its args: the rendered `--metric-labels-allowlist`), the node-exporter
DaemonSet (its args: the rendered `extraArgs`), their Services and their ServiceMonitors;
the ServiceMonitors become Prometheus scrape configs the way prometheus-operator writes
them (tests/monitoring/servicemonitor.py, citing pkg/prometheus/promcfg.go at v0.93.0) and
Prometheus discovers the targets with kubernetes_sd (role endpoints) from the test
apiserver, where the chart's Pods are bound to nodes shaped like the environment's pools
(tests/monitoring/scrape_stack.py). So every label a query reads comes from the real
exporter or the real relabeling, never from this test.

Then the rendered queries, read from the rendered ConfigMaps:
- the gate's free-GPU query (overflow-gate): its per-node operand (what the outer `sum`
  adds up) is keyed by node name with each inference node's free GPUs, and the query is
  their sum (kube-state-metrics);
- every health condition that reads node_exporter (`node_*` series) names exactly the node
  the InfiniBand scene broke (port down on `<ib pool>-001`, a symbol-error burst on
  `<ib pool>-000`), through the health controller's own client
  (`PrometheusClient.query_nodes`). The conditions copy `node` from `instance`; the
  rendered values relabel `instance` to the pod's node name
  (`prometheus-node-exporter.prometheus.monitor.relabelings`).
- the control, `staging-without-relabeling`: the same stack with that relabeling taken out
  of the values (the chart's default `relabelings: []`, what the values carried before
  the fix): the same conditions are keyed by `<hostIP>:9100` and name no node, which is
  why InfiniBand quarantine never fired. So the test can fail, and fails for that reason.
Conditions reading dcgm-exporter (`DCGM_*`) are not scraped here (no GPU on this host).

InfiniBand values are SYNTHETIC (this host has none): files in a sysfs tree read by
node_exporter's own infiniband collector (see scrape_processes.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from trainyard_gate.health.policy import Condition
from trainyard_gate.health.policy import parse as parse_health
from trainyard_gate.overflow.policy import parse as parse_gate
from trainyard_gate.runtime.prometheus import PrometheusClient
from trainyard_gate.runtime.reader import PrometheusEndpoint

from box.kube import Kube
from generators.layout import environment_names
from generators.promql.reads import parse, selectors
from tests.monitoring import scrape_stack, servicemonitor
from tests.monitoring.scrape_cluster import GPU_POD_REQUEST
from tests.monitoring.scrape_processes import container_port
from tests.monitoring.stack_chart import CHART, NODE_EXPORTER_SOURCE, values_file
from tests.support import ROOT, archive, tools

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

TOOLS = ("etcd", "kube-apiserver", "helm", "kube-state-metrics", "node_exporter", "prometheus")
GATE = Path("overflow/trainyard-system/configmap-overflow-gate-policy.yaml")
HEALTH = Path("health/trainyard-system/configmap-gpu-health-policy.yaml")
ENVIRONMENTS = [
    e
    for e in environment_names(ROOT)
    if all((ROOT / "rendered" / e / path).is_file() for path in (GATE, HEALTH))
]
CONTROL = "staging"  # the environment also run without the node-exporter relabeling
# The node the InfiniBand scene breaks for each condition (index in the first IB pool).
BROKEN_NODE = {"infiniband-port-down": 1, "infiniband-link-errors": 0}


def policy_text(env: str, path: Path) -> str:
    config_map = yaml.safe_load((ROOT / "rendered" / env / path).read_text(encoding="utf-8"))
    text: str = config_map["data"]["policy.yaml"]
    return text


def node_exporter_conditions(env: str) -> list[Condition]:
    """The rendered health conditions that read only node_exporter series (`node_*`)."""
    policy = parse_health(policy_text(env, HEALTH), str(HEALTH))
    return [c for c in policy.conditions if all(s.name.startswith("node_") for s in selectors(c.query))]


def without_relabeling(env: str, directory: Path) -> Path:
    """The rendered values minus node-exporter's relabelings (the chart's default: none)."""
    values = yaml.safe_load(values_file(env).read_text(encoding="utf-8"))
    monitor = values["prometheus-node-exporter"]["prometheus"]["monitor"]
    assert monitor.pop("relabelings", None), "the rendered values relabel node-exporter's targets"
    path = directory / "kube-prometheus-stack-values.yaml"
    path.write_text(yaml.safe_dump(values), encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=[*ENVIRONMENTS, f"{CONTROL}-without-relabeling"])
def stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[scrape_stack.Stack]:
    tools(*TOOLS)  # fail, never skip: CI installs every tool first (make tools)
    archive(CHART)
    kube: Kube = request.getfixturevalue("kube")
    kubeconfig: Path = request.getfixturevalue("kubeconfig")
    env, _, control = str(request.param).partition("-without-")
    workdir = tmp_path_factory.mktemp("scrape")
    values = without_relabeling(env, workdir) if control else None
    with scrape_stack.running(env, kube, kubeconfig, workdir, values) as running:
        yield running


def client(stack: scrape_stack.Stack) -> PrometheusClient:
    return PrometheusClient(PrometheusEndpoint(stack.prometheus.url, timeout_seconds=10))


def test_every_exporter_is_discovered_on_its_node(stack: scrape_stack.Stack) -> None:
    """kubernetes_sd found the chart's pods through its Services: one node-exporter target per
    node (the DaemonSet tolerates every pool's taints), kube-state-metrics once, all up."""
    monitor = stack.chart.one(NODE_EXPORTER_SOURCE, "ServiceMonitor")
    node_job = servicemonitor.scrape_config(monitor, 0)["job_name"]
    targets = stack.prometheus.active_targets()
    assert all(t["health"] == "up" for t in targets), [(t["scrapeUrl"], t["lastError"]) for t in targets]
    on_nodes = sorted(
        t["discoveredLabels"]["__meta_kubernetes_pod_node_name"]
        for t in targets
        if t["scrapePool"] == node_job
    )
    assert on_nodes == sorted(p.name for p in stack.plans) == stack.exporter_nodes


def test_kube_state_metrics_exports_the_pools_node_labels(stack: scrape_stack.Stack) -> None:
    """The rendered allowlist reaches kube-state-metrics: label_<key> per pool nodeLabel."""
    for pool in stack.env.pools:
        for name in stack.pool_nodes(pool):
            [series] = stack.prometheus.query(f'kube_node_labels{{job="kube-state-metrics", node="{name}"}}')
            for key, value in pool.node_labels.items():
                assert series["metric"].get("label_" + servicemonitor.sanitize(key)) == value, series


def test_the_gate_query_counts_free_gpus_per_node(stack: scrape_stack.Stack, kube: Kube) -> None:
    """The operand of the rendered query's outer sum, per node: the inference pool's nodes by
    name, each with its free GPUs (perNode, minus the one pod's request on -000)."""
    policy = parse_gate(policy_text(stack.env.name, GATE), str(GATE))
    per_node = str(_outer_sum(policy.query).expr)
    result = {r["metric"]["node"]: float(r["value"][1]) for r in stack.prometheus.query(per_node)}
    pool = scrape_stack.inference_pool(stack.env)
    ours = {name: value for name, value in result.items() if name in {p.name for p in stack.plans}}
    assert ours == {
        f"{pool.name}-000": pool.gpus_per_node - GPU_POD_REQUEST,
        f"{pool.name}-001": float(pool.gpus_per_node),
    }
    listed = {node["metadata"]["name"] for node in kube.list("v1", "Node")}
    assert set(result) <= listed, "every key is a node name"
    gate_client = client(stack)
    try:
        assert gate_client.query_single(policy.query) == sum(result.values())
    finally:
        gate_client.close()


def _outer_sum(query: str) -> Any:
    """The `sum(...)` the rendered query ends in, left of its `and on ()` guards."""
    import promql_parser

    node = parse(query)
    while isinstance(node, promql_parser.BinaryExpr):
        node = node.lhs
    assert isinstance(node, promql_parser.AggregateExpr), query
    assert str(node.op) == "sum" and node.modifier is None, query
    return node


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_every_node_exporter_condition_has_a_broken_node(env: str) -> None:
    """The scene breaks one node per condition (a new condition needs a scene here)."""
    assert {c.reason for c in node_exporter_conditions(env)} == set(BROKEN_NODE)


def broken_node(stack: scrape_stack.Stack, reason: str) -> str:
    return f"{scrape_stack.ib_pool(stack.env).name}-{BROKEN_NODE[reason]:03d}"


def test_the_broken_nodes_are_in_the_policys_pools(stack: scrape_stack.Stack, kube: Kube) -> None:
    """So the controller would act on them once a query names them."""
    policy = parse_health(policy_text(stack.env.name, HEALTH), str(HEALTH))
    in_pools = {
        n["metadata"]["name"]
        for p in policy.pools
        for n in kube.list("v1", "Node", label_selector=p.label_selector)
    }
    assert {broken_node(stack, reason) for reason in BROKEN_NODE} <= in_pools


def test_node_exporter_conditions_name_the_broken_node(stack: scrape_stack.Stack) -> None:
    """Through the health controller's own query client, each condition returns exactly the
    node its scene broke, by name; without the rendered relabeling (the control), by
    `<hostIP>:<port>` (the Endpoints address: node-exporter runs on the host network)."""
    health_client = client(stack)
    try:
        found = {
            c.reason: sorted(health_client.query_nodes(c.query))
            for c in node_exporter_conditions(stack.env.name)
        }
    finally:
        health_client.close()
    if stack.values == values_file(stack.env.name):
        assert found == {reason: [broken_node(stack, reason)] for reason in BROKEN_NODE}
    else:
        port = container_port(stack.chart.one(NODE_EXPORTER_SOURCE, "DaemonSet"), "http-metrics")
        address = {p.name: p.address for p in stack.plans}
        assert found == {reason: [f"{address[broken_node(stack, reason)]}:{port}"] for reason in BROKEN_NODE}
