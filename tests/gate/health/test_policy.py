"""NodeHealthPolicy loading: the contract example parses; bad input fails with the same
one-line `file:line:col: error: <what> (<spec path>)` as the TaintPolicy."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from trainyard_gate.health.policy import Cap, Condition, NodeHealthPolicy, Pool, parse
from trainyard_gate.kinds import load_policy
from trainyard_gate.overflow.policy import TaintPolicy
from trainyard_gate.runtime.reader import PolicyError

from tests.support import GATE_DIR

from ..health_example import EXAMPLE
from ..program import gate_command, write_inputs
from ..refusals import refusal, refusal_of_edit
from ..taint_example import EXAMPLE as TAINT_EXAMPLE


def error(text: str) -> str:
    return refusal(parse, text)


def test_contract_example_loads() -> None:
    policy = parse(EXAMPLE, "policy.yaml")
    assert policy.name == "gpu-health"
    assert policy.prometheus.url == "http://prometheus-operated.monitoring.svc:9090"
    assert policy.prometheus.timeout_seconds == 5 and policy.reconcile_interval_seconds == 30
    taint = policy.taint("xid")
    assert (taint.key, taint.value, taint.effect) == ("trainyard.dev/gpu-health", "xid", "NoSchedule")
    assert (policy.reason_annotation, policy.since_annotation) == (
        "trainyard.dev/gpu-health-reason",
        "trainyard.dev/gpu-health-since",
    )
    assert policy.conditions == (
        Condition("gpu-temperature", "max by (node) (DCGM_FI_DEV_GPU_TEMP) > 78", 300),
        Condition("xid", "max by (node) (DCGM_FI_DEV_XID_ERRORS) > 0", 0),
    )
    assert policy.release_after_seconds == 1800
    assert policy.pools[0] == Pool("train-h100-a", (("trainyard.dev/pool", "train-h100-a"),))
    assert policy.pools[0].label_selector == "trainyard.dev/pool=train-h100-a"
    assert policy.cap == Cap(4, 10) and not policy.dry_run


def test_the_file_picks_the_kind(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(EXAMPLE, encoding="utf-8")
    assert isinstance(load_policy(path), NodeHealthPolicy)
    path.write_text(TAINT_EXAMPLE, encoding="utf-8")
    assert isinstance(load_policy(path), TaintPolicy)
    path.write_text(EXAMPLE.replace("kind: NodeHealthPolicy", "kind: HealthPolicy"), encoding="utf-8")
    with pytest.raises(PolicyError) as caught:
        load_policy(path)
    assert str(caught.value) == (
        f"{path}:2:7: error: expected 'TaintPolicy' or 'NodeHealthPolicy', got 'HealthPolicy' (kind)"
    )


# A percentage is floored but never below one node of a non-empty pool
# (3 % of 32 nodes was 0: a small pool could never lose a bad node); 0 % still means none.
@pytest.mark.parametrize(
    "percent, nodes, cap",
    [
        (10, 9, 1),
        (10, 10, 1),
        (10, 19, 1),
        (10, 30, 3),
        (12.5, 8, 1),
        (100, 7, 7),
        (0, 50, 0),
        (3, 36, 1),
        (3, 32, 1),
        (3, 0, 0),
        (10, 1, 1),
    ],
)
def test_pool_cap_is_floored_with_a_floor_of_one_node(percent: float, nodes: int, cap: int) -> None:
    assert Cap(4, percent).pool_cap(nodes) == cap


@pytest.mark.parametrize("own, nodes, cap", [(2, 36, 2), (5, 3, 3), (0, 10, 0), (1, 0, 0)])
def test_a_pools_own_cap_replaces_the_percentage(own: int, nodes: int, cap: int) -> None:
    assert Cap(4, 50).pool_cap(nodes, own) == cap


def test_a_pool_may_carry_its_own_max_nodes() -> None:
    text = EXAMPLE.replace(
        "      matchLabels: {trainyard.dev/pool: train-h100-a}\n",
        "      matchLabels: {trainyard.dev/pool: train-h100-a}\n    maxNodes: 2\n",
        1,
    )
    assert text != EXAMPLE
    pools = {p.name: p.max_nodes for p in parse(text, "policy.yaml").pools}
    assert pools == {"train-h100-a": 2, "infer-l40s": None}
    message = error(text.replace("maxNodes: 2", "maxNodes: -1"))
    assert "expected a whole number >= 0, got -1 (spec.pools[0].maxNodes)" in message


def test_noexecute_is_refused_with_the_reason() -> None:
    message = error(EXAMPLE.replace("effect: NoSchedule", "effect: NoExecute"))
    assert message.startswith("policy.yaml:14:13: error: taint effect NoExecute is refused")
    assert message.endswith("(spec.taint.effect)")


@pytest.mark.parametrize(
    "old, new, expected",
    [
        (
            "reason: gpu-temperature",
            "reason: GPU_Temperature",
            "policy.yaml:19:13: error: reason 'GPU_Temperature' is not [a-z0-9]([-a-z0-9]*[a-z0-9])? "
            "of at most "
            "63 characters (it becomes the taint value) (spec.conditions[0].reason)",
        ),
        ("reason: gpu-temperature", "reason: " + "a" * 64, "of at most 63 characters"),
        ("reason: gpu-temperature", "reason: gpu-temperature-", "is not [a-z0-9]"),
        (
            "reason: xid",
            "reason: gpu-temperature",
            "policy.yaml:22:13: error: duplicate reason 'gpu-temperature' (spec.conditions[1].reason)",
        ),
        (
            "    quarantineAfterSeconds: 300",
            "    quarantineAfterSecond: 300",
            "policy.yaml:21:28: error: unknown field 'quarantineAfterSecond'; did you mean "
            "'quarantineAfterSeconds'? (spec.conditions[0].quarantineAfterSecond)",
        ),
        (
            "  releaseAfterSeconds: 1800",
            "  releaseAfterSecs: 1800",
            "unknown field 'releaseAfterSecs'; did you mean 'releaseAfterSeconds'? (spec.releaseAfterSecs)",
        ),
        ("    maxNodes: 4", "    maxNode: 4", "did you mean 'maxNodes'? (spec.cap.maxNode)"),
        (
            "onPrometheusUnavailable: hold",
            "onPrometheusUnavailable: open",
            "policy.yaml:10:28: error: expected one of hold, got 'open' (spec.onPrometheusUnavailable)",
        ),
        (
            "    key: trainyard.dev/gpu-health",
            "    key: trainyard.dev/gpu-health\n    value: gpu",
            "unknown field 'value' (spec.taint.value)",
        ),
        (
            "    quarantineAfterSeconds: 0",
            "    quarantineAfterSeconds: -1",
            "expected a number of seconds >= 0, got -1 (spec.conditions[1].quarantineAfterSeconds)",
        ),
        (
            "    maxPercentOfPool: 10",
            "    maxPercentOfPool: 150",
            "expected a percentage 0..100, got 150 (spec.cap.maxPercentOfPool)",
        ),
        ("    maxNodes: 4", "    maxNodes: 2.5", "expected a whole number >= 0, got 2.5 (spec.cap.maxNodes)"),
        ("  - name: infer-l40s", "  - name: train-h100-a", "duplicate pool name 'train-h100-a'"),
        (
            "  - name: infer-l40s",
            "  - name: Infer_L40S",
            "pool name 'Infer_L40S' is not a DNS label (spec.pools[1].name)",
        ),
        (
            "    key: trainyard.dev/gpu-health",
            "    key: 'bad key'",
            "invalid key 'bad key': expected a qualified name (prefix/name) (spec.taint.key)",
        ),
        (
            "    since: trainyard.dev/gpu-health-since",
            "    since: since/",
            "invalid key 'since/': expected a qualified name (prefix/name) (spec.annotations.since)",
        ),
        (
            "      matchLabels: {trainyard.dev/pool: infer-l40s}",
            "      matchLabels: {}",
            "an empty selector matches all (spec.pools[1].nodeSelector.matchLabels)",
        ),
        (
            "      matchLabels: {trainyard.dev/pool: infer-l40s}",
            "      matchLabels: {gpu: l40s}",
            "pools 'train-h100-a' and 'infer-l40s' can select the same node (spec.pools[1].nodeSelector)",
        ),
        (
            "    since: trainyard.dev/gpu-health-since",
            "    since: trainyard.dev/gpu-health-reason",
            "is also the reason annotation (spec.annotations.since)",
        ),
        ("  conditions:\n", "  conditions: []\n  old:\n", "unknown field 'old'"),
    ],
)
def test_bad_values_are_reported_with_position_and_path(old: str, new: str, expected: str) -> None:
    assert expected in refusal_of_edit(parse, EXAMPLE, old, new)


def test_missing_sections_are_named() -> None:
    without_cap = EXAMPLE[: EXAMPLE.index("  cap:")]
    assert error(without_cap).endswith("error: missing required field 'cap' (spec.cap)")


def test_empty_conditions_are_refused() -> None:
    start, end = EXAMPLE.index("  conditions:"), EXAMPLE.index("  releaseAfterSeconds:")
    text = EXAMPLE[:start] + "  conditions: []\n" + EXAMPLE[end:]
    assert error(text).endswith("error: expected a non-empty list of conditions (spec.conditions)")


def test_duplicate_keys_are_refused() -> None:
    line = "  releaseAfterSeconds: 1800\n"
    text = EXAMPLE.replace(line, line + "  releaseAfterSeconds: 60\n")
    assert "duplicate key (spec.releaseAfterSeconds)" in error(text)


def run_cli(tmp_path: Path, policy_text: str, *args: str) -> subprocess.CompletedProcess[str]:
    policy, kubeconfig = write_inputs(tmp_path, policy_text)
    return subprocess.run(
        gate_command(policy, kubeconfig, "--metrics-port", "0", *args),
        cwd=GATE_DIR,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_cli_refuses_a_bad_health_policy_in_one_line(tmp_path: Path) -> None:
    done = run_cli(tmp_path, EXAMPLE.replace("reason: xid", "reason: XID"))
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"{tmp_path / 'policy.yaml'}:22:13: error: reason 'XID'")


def test_cli_runs_the_health_loop_and_fails_once_when_nodes_cannot_be_listed(tmp_path: Path) -> None:
    done = run_cli(tmp_path, EXAMPLE, "--once", "--dry-run")
    assert done.returncode == 1
    logs = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    [start] = [entry for entry in logs if entry["msg"] == "starting"]
    assert start["pools"] == ["train-h100-a", "infer-l40s"] and start["reasons"] == ["gpu-temperature", "xid"]
    assert start["dry_run"] is True
    assert any(entry["msg"] == "cannot list pool nodes" for entry in logs)
