"""monitoring.stack: the supported stack renders (kube-prometheus is refused at the spot, with
its reason, nothing written: a row of test_refusals.py). Also the
independent evaluators test_charts.py reads the charts with (kubeselect.py), on literal
cases, so they cannot pass by accident."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.monitoring import kubeselect
from tests.monitoring.minimal import with_section
from tests.support.scratch import run_cli, tree_digest


def test_kube_prometheus_stack_is_the_default_and_renders(tmp_path: Path) -> None:
    for folder in ("explicit", "plain"):
        (tmp_path / folder).mkdir()
    explicit = with_section(tmp_path / "explicit", "monitoring:\n  stack: kube-prometheus-stack\n")
    plain = with_section(tmp_path / "plain", "")
    assert run_cli(explicit, "render", "bad")[0] == 0
    assert run_cli(plain, "render", "bad")[0] == 0
    assert tree_digest(explicit / "rendered" / "bad") == tree_digest(plain / "rendered" / "bad")


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        (None, {"a": "1"}, False),  # null: nothing
        ({}, {}, True),  # empty: everything
        ({"matchLabels": {"release": "kps"}}, {"release": "kps", "x": "y"}, True),
        ({"matchLabels": {"release": "kps"}}, {"app": "kueue"}, False),
        (
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
            {"tier": "b"},
            True,
        ),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]}, {}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}, {}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}, {"tier": "a"}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {"tier": ""}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, {"tier": "x"}, False),
        (
            {"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]},
            {"a": "1"},
            False,
        ),
    ],
)
def test_label_selector(selector: dict[str, object] | None, labels: dict[str, str], expected: bool) -> None:
    assert kubeselect.matches(selector, labels) is expected


def test_prometheus_namespace_selectors() -> None:
    sm = {"kind": "ServiceMonitor", "metadata": {"name": "x", "namespace": "gpu-operator", "labels": {}}}
    own = {"metadata": {"namespace": "monitoring"}, "spec": {"serviceMonitorSelector": {}}}
    assert not kubeselect.selected(own, sm, {})  # null namespace selector: its own namespace only
    every = {
        "metadata": {"namespace": "monitoring"},
        "spec": {"serviceMonitorSelector": {}, "serviceMonitorNamespaceSelector": {}},
    }
    assert kubeselect.selected(every, sm, {})
    by_name = {
        "metadata": {"namespace": "monitoring"},
        "spec": {
            "serviceMonitorSelector": {},
            "serviceMonitorNamespaceSelector": {
                "matchLabels": {"kubernetes.io/metadata.name": "gpu-operator"}
            },
        },
    }
    assert kubeselect.selected(by_name, sm, {})
    rule = {"kind": "PrometheusRule", "metadata": {"name": "r", "namespace": "monitoring", "labels": {}}}
    assert not kubeselect.selected(every, rule, {})  # ruleSelector null: no rules


def test_relabel_replace_and_instance_default() -> None:
    target = {"__address__": "10.0.0.7:9100", "__meta_kubernetes_pod_node_name": "n1"}
    assert kubeselect.relabel(target, [])["instance"] == "10.0.0.7:9100"
    to_node = [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "instance"}]
    assert kubeselect.relabel(target, to_node)["instance"] == "n1"
    split = [
        {
            "sourceLabels": ["__address__"],
            "regex": "(.*):(\\d+)",
            "replacement": "${1}",
            "targetLabel": "host",
        }
    ]
    assert kubeselect.relabel(target, split)["host"] == "10.0.0.7"
    no_match = [{"sourceLabels": ["__address__"], "regex": "nothing", "targetLabel": "instance"}]
    assert kubeselect.relabel(target, no_match)["instance"] == "10.0.0.7:9100"
