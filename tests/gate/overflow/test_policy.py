"""TaintPolicy loading: the contract example parses; bad input fails with one clear line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from trainyard_gate.overflow.hysteresis import OnUnavailable, Thresholds
from trainyard_gate.overflow.policy import load, parse
from trainyard_gate.runtime.reader import PolicyError, Taint

from ..refusals import refusal, refusal_of_edit
from ..taint_example import EXAMPLE


def test_contract_example_loads(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(EXAMPLE, encoding="utf-8")
    policy = load(path)
    assert policy.name == "overflow-gate"
    assert policy.prometheus.url == "http://prometheus-operated.monitoring.svc:9090"
    assert policy.prometheus.timeout_seconds == 5
    assert policy.query.startswith("sum(kube_node_status_allocatable")
    assert policy.reconcile_interval_seconds == 30
    assert policy.on_prometheus_unavailable is OnUnavailable.HOLD
    assert policy.dry_run is False
    assert [gate.name for gate in policy.gates] == ["lambda", "salad"]  # order kept
    lam = policy.gates[0]
    assert lam.label_selector == "trainyard.dev/provider=lambda,type=virtual-kubelet"
    assert lam.taint == Taint("trainyard.dev/overflow-gate", "closed", "NoSchedule")
    assert lam.thresholds == Thresholds(64, 600, 16, 60)


def _without_line(text: str, start: str) -> str:
    """`text` without its first line that starts with `start` (which one must)."""
    found = re.search(f"^{re.escape(start)}.*\n", text, flags=re.MULTILINE)
    assert found, f"no line starts with {start!r}"
    return text[: found.start()] + text[found.end() :]


def test_optional_fields_take_documented_defaults() -> None:
    text = EXAMPLE
    for key in (
        "    timeoutSeconds:",
        "  reconcileIntervalSeconds:",
        "  onPrometheusUnavailable:",
        "  dryRun:",
    ):
        text = _without_line(text, key)
    policy = parse(text, "policy.yaml")
    assert policy.prometheus.timeout_seconds == 5
    assert policy.reconcile_interval_seconds == 30
    assert policy.on_prometheus_unavailable is OnUnavailable.HOLD
    assert policy.dry_run is False


# The lambda gate's node selector, which three cases below break.
LAMBDA_SELECTOR = "matchLabels: {type: virtual-kubelet, trainyard.dev/provider: lambda}"


def _error(text: str) -> str:
    return refusal(parse, text)


def test_noexecute_is_refused_with_the_reason() -> None:
    message = _error(EXAMPLE.replace("effect: NoSchedule}", "effect: NoExecute}", 1))
    assert message.startswith("policy.yaml:17:")  # the lambda gate's taint line
    assert "NoExecute is refused" in message and "PodDisruptionBudgets" in message
    assert message.endswith("(spec.gates[0].taint.effect)")


def test_prefer_no_schedule_is_refused() -> None:
    message = _error(EXAMPLE.replace("effect: NoSchedule}", "effect: PreferNoSchedule}", 1))
    assert "must be NoSchedule" in message


@pytest.mark.parametrize("open_below", [64, 65, 100])
def test_close_threshold_must_exceed_open_threshold(open_below: int) -> None:
    message = _error(EXAMPLE.replace("openWhenFreeGpusBelow: 16", f"openWhenFreeGpusBelow: {open_below}"))
    assert "must be greater than openWhenFreeGpusBelow" in message
    assert message.endswith("(spec.gates[0].closeWhenFreeGpusAtLeast)")


@pytest.mark.parametrize(
    ("line", "path"),
    [
        ("    url:", "spec.prometheus.url"),
        ("      closeWhenFreeGpusAtLeast:", "spec.gates[0].closeWhenFreeGpusAtLeast"),
        ("      closeAfterSeconds:", "spec.gates[0].closeAfterSeconds"),
        ("      openWhenFreeGpusBelow:", "spec.gates[0].openWhenFreeGpusBelow"),
        ("      openAfterSeconds:", "spec.gates[0].openAfterSeconds"),
        ("    - name: lambda", "spec.gates[0].name"),
        ("  name: overflow-gate", "metadata.name"),
        ("kind:", "kind"),
    ],
)
def test_missing_required_field(line: str, path: str) -> None:
    """The first line starting with `line` removed (the lambda gate's, for a gate's field)."""
    text = _without_line(EXAMPLE, line)
    if path == "metadata.name":  # metadata there, its name not
        text = text.replace("metadata:\n", "metadata: {}\n", 1)
    if path == "spec.gates[0].name":
        text = text.replace("      nodeSelector:", "    - nodeSelector:", 1)
    message = _error(text)
    assert "missing required field" in message and message.endswith(f"({path})")


def test_missing_query_and_gates() -> None:
    assert _error(re.sub(r"  query: .*\n", "", EXAMPLE)).endswith("(spec.query)")
    assert _error(EXAMPLE.split("  gates:")[0]).endswith("(spec.gates)")
    assert "non-empty list" in _error(EXAMPLE.split("  gates:")[0] + "  gates: []\n")


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("closeAfterSeconds: 600", "closeAfterSecond: 600", "did you mean 'closeAfterSeconds'"),
        ("onPrometheusUnavailable: hold", "onPrometheusUnavailable: wait", "hold, close, open"),
        ("apiVersion: trainyard.dev/v1alpha1", "apiVersion: v1", "trainyard.dev/v1alpha1"),
        ("url: http://prometheus-operated", "url: prometheus-operated", "http(s) URL"),
        ("timeoutSeconds: 5", "timeoutSeconds: 0", "seconds > 0"),
        ("closeAfterSeconds: 600", "closeAfterSeconds: -1", "seconds >= 0"),
        ("closeWhenFreeGpusAtLeast: 64", "closeWhenFreeGpusAtLeast: 64.5", "whole number"),
        ("closeWhenFreeGpusAtLeast: 64", "closeWhenFreeGpusAtLeast: true", "whole number"),
        ("dryRun: false", "dryRun: 'no'", "true or false"),
        ("- name: lambda", "- name: Lambda_GPUs", "DNS label"),
        ("- name: salad", "- name: lambda", "duplicate gate name"),
        ("provider: salad}", "provider: lambda}", "would fight"),
        (LAMBDA_SELECTOR, "matchLabels: {}", "empty selector matches all"),
        (LAMBDA_SELECTOR, "matchLabels: {type: virtual-kubelet, gpus: 8}", "label value must be a string"),
        (LAMBDA_SELECTOR, "matchExpressions: []", "unknown field 'matchExpressions'"),
        ("key: trainyard.dev/overflow-gate,", "key: 'bad key',", "invalid taint key"),
        ("    timeoutSeconds: 5 ", "    timeoutSeconds: 6\n    timeoutSeconds: 5 ", "duplicate key"),
    ],
)
def test_bad_values_are_reported_with_position_and_path(old: str, new: str, expected: str) -> None:
    assert expected in refusal_of_edit(parse, EXAMPLE, old, new)


def test_overlapping_selectors_with_distinct_taint_keys_are_allowed() -> None:
    text = EXAMPLE.replace("provider: salad}", "provider: lambda}").replace(
        "key: trainyard.dev/overflow-gate, value: closed, effect: NoSchedule}\n"
        "      closeWhenFreeGpusAtLeast: 64\n      closeAfterSeconds: 600\n"
        "      openWhenFreeGpusBelow: 8",
        "key: trainyard.dev/other-gate, value: closed, effect: NoSchedule}\n"
        "      closeWhenFreeGpusAtLeast: 64\n      closeAfterSeconds: 600\n"
        "      openWhenFreeGpusBelow: 8",
    )
    assert len(parse(text, "policy.yaml").gates) == 2


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=r"cannot read policy"):
        load(tmp_path / "absent.yaml")
    with pytest.raises(PolicyError, match=r"^policy\.yaml:3:1: error: invalid YAML"):
        parse("spec:\n  gates: [\n", "policy.yaml")
    with pytest.raises(PolicyError, match=r"policy file is empty"):
        parse("", "policy.yaml")
    with pytest.raises(PolicyError, match=r"expected a mapping, got a list"):
        parse("- 1\n", "policy.yaml")
    with pytest.raises(PolicyError, match=r"recursive alias"):
        parse("spec: &a\n  gates: *a\n", "policy.yaml")
