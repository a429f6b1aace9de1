"""rendered/<env>/installers/: the GPU operator and kube-prometheus-stack values that make the
exporters emit what the dashboards, rules and the gate query read, derived from the spec."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import yaml

from generators.components import monitoring
from generators.components.monitoring import dashboards
from generators.components.monitoring.alerts import groups
from generators.pipeline.render import render_environment, render_tree
from generators.promql.reads import selectors
from tests.monitoring.conftest import Shipped
from tests.support import ROOT


def committed(shipped: Shipped, name: str) -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load(
        (ROOT / "rendered" / shipped.name / "installers" / name).read_text()
    )
    return values


def expressions(shipped: Shipped) -> list[str]:
    """Every PromQL expression the environment ships: panels, variables, rules, gate query."""
    env = shipped.env
    found = [r["expr"] for g in groups(env) for r in g["rules"]]
    for _, build in dashboards.builders(env):
        board = build(env)
        stack = list(board["panels"])
        while stack:
            panel = stack.pop()
            stack += panel.get("panels", [])
            found += [t["expr"] for t in panel.get("targets", [])]
        found += [
            v["query"].removeprefix("label_values(").rsplit(", ", 1)[0]
            for v in board["templating"]["list"]
            if v["type"] == "query"
        ]
    if env.overflow is not None:
        found.append(env.overflow.gate.free_gpus_query)
    return found


def test_allowlist_is_exactly_the_pools_node_label_keys_sorted(shipped: Shipped) -> None:
    values = committed(shipped, monitoring.KUBE_PROMETHEUS_STACK_VALUES)
    keys = sorted({k for pool in shipped.spec["pools"] for k in pool["nodeLabels"]})
    assert values["kube-state-metrics"]["metricLabelsAllowlist"] == [f"nodes=[{','.join(keys)}]"]


def test_allowlist_covers_every_node_label_an_expression_reads(shipped: Shipped) -> None:
    """Derived the other way round: every label_* matcher on kube_node_labels in a shipped
    expression is a key the allowlist exports."""
    exported = set(monitoring.ksm_node_labels(shipped.env))
    read = {
        m.label
        for e in expressions(shipped)
        for s in selectors(e)
        if s.name == "kube_node_labels"
        for m in s.matchers
        if m.label.startswith("label_")
    }
    assert read and read <= exported, read - exported


def test_gpu_operator_values_carry_the_counters_and_honor_labels(shipped: Shipped) -> None:
    """The chart creates the counters ConfigMap (config.create), the pod template carries their
    sha256 (a change rolls the exporter), and Argo CD no longer applies a second copy."""
    dcgm = committed(shipped, monitoring.GPU_OPERATOR_VALUES)["dcgmExporter"]
    config = dcgm["config"]
    assert config["name"] == shipped.spec["monitoring"]["dcgmExporter"]["configMapName"]
    assert config["create"] is True and config["data"].startswith("# Rendered by trainyard")
    assert dcgm["annotations"] == {
        "trainyard.dev/dcgm-counters-sha256": hashlib.sha256(config["data"].encode()).hexdigest()
    }
    assert "env" not in dcgm  # the operator sets DCGM_EXPORTER_COLLECTORS itself (test_charts.py)
    monitoring_spec = shipped.spec["monitoring"]
    # the stack's Prometheus selects release: <monitoring.release> (its chart's default)
    labels = {"release": monitoring_spec["release"], **monitoring_spec["rules"]["labels"]}
    assert dcgm["serviceMonitor"] == {"enabled": True, "honorLabels": True, "additionalLabels": labels}
    named = shipped.spec["monitoring"]["exporters"]["dcgmExporter"]
    assert dcgm.get("version") == (named if "-" in named else None)  # pinned only from an image tag
    assert not [o for o in shipped.of_kind("ConfigMap") if "dcgm-metrics.csv" in o.get("data", {})]


def test_mountstats_only_when_the_checkpoint_query_reads_it(shipped: Shipped) -> None:
    env = shipped.env
    values = committed(shipped, monitoring.KUBE_PROMETHEUS_STACK_VALUES)
    args = values["prometheus-node-exporter"]["extraArgs"]
    release = env.monitoring.exporters.node_exporter
    assert args == [*release.chart_extra_args, "--collector.mountstats"]  # chart defaults repeated first
    lustre = dataclasses.replace(
        env,
        monitoring=dataclasses.replace(
            env.monitoring,
            checkpoint_write_query='sum(rate(lustre_write_bytes_total{component="client"}[5m]))',
        ),
    )
    assert "extraArgs" not in monitoring.kube_prometheus_stack_values(lustre)["prometheus-node-exporter"]


def test_installer_inputs_are_rendered_but_are_not_objects(shipped: Shipped) -> None:
    tree = {f.path for f in render_tree(shipped.env)}
    objects = {f.path for f in render_environment(shipped.env)}
    for name in (monitoring.GPU_OPERATOR_VALUES, monitoring.KUBE_PROMETHEUS_STACK_VALUES):
        assert f"installers/{name}" in tree and f"installers/{name}" not in objects
