"""The health alerts run exactly what the controller runs, and their promtool cases bite.

The condition alerts (trainyard-health group) must carry the very query text of the
rendered NodeHealthPolicy (rendered/<env>/health/.../configmap-gpu-health-policy.yaml), with `for:`
= quarantineAfterSeconds; tests/monitoring/cases_health.py tests their edges with promtool.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from generators.components.monitoring.alerts.health import prometheus_duration
from tests.monitoring.alert_cases import Builder, promtool_tests
from tests.monitoring.conftest import Shipped, load_shipped
from tests.monitoring.rendered_views import QUARANTINING, all_rules, policy, rules_file_text, run
from tests.support import ROOT


@pytest.mark.parametrize("env", QUARANTINING)
def test_each_condition_alert_runs_the_controllers_query_for_its_duration(env: str) -> None:
    shipped = load_shipped(env)
    rules = {r["alert"]: r for r in all_rules(shipped)}
    spec = policy(env)["spec"]
    assert isinstance(spec, dict)
    assert shipped.env.health is not None and shipped.env.health.controller is not None
    conditions = shipped.env.health.controller.conditions
    assert [c["reason"] for c in spec["conditions"]] == [c.reason for c in conditions if c.enabled]
    for rendered, cond in zip(spec["conditions"], conditions, strict=False):
        rule = rules[cond.alert]
        assert rule["expr"] == rendered["query"] == cond.query
        seconds = rendered["quarantineAfterSeconds"]
        assert rule.get("for") == (prometheus_duration(seconds) if seconds else None)
        assert rule["labels"]["reason"] == rendered["reason"]


def test_no_health_alerts_without_the_builtin_backend() -> None:
    dev = load_shipped("dev")
    assert dev.spec["health"]["backend"] == "nvsentinel"
    assert not [r for r in all_rules(dev) if r["alert"].startswith("GpuHealth")]
    assert not (ROOT / "rendered" / "dev" / "health").exists()


@pytest.mark.parametrize(
    ("seconds", "text"), [(300, "5m"), (0, "0h"), (90, "90s"), (3600, "1h"), (1860, "31m")]
)
def test_duration(seconds: int, text: str) -> None:
    assert prometheus_duration(seconds) == text


def test_a_shorter_quarantine_duration_fails_promtool(promtool: Path, tmp_path: Path) -> None:
    """The edge cases bite: quarantine one minute early (for: 4m instead of 5m) and the
    "one sample less" case of the temperature condition fails."""
    shipped: Shipped = load_shipped("staging")
    hold = shipped.spec["health"]["conditions"]["gpuTemperature"]["quarantineAfterSeconds"]
    groups = yaml.safe_load(rules_file_text(shipped))
    [rule] = [r for g in groups["groups"] for r in g["rules"] if r.get("alert") == "GpuHealthGpuTemperature"]
    assert rule["for"] == prometheus_duration(hold)
    rule["for"] = prometheus_duration(hold - 60)
    broken = yaml.safe_dump(groups, sort_keys=False)
    cases = [c for c in Builder(shipped.spec).all() if c.alert == "GpuHealthGpuTemperature"]
    (tmp_path / "rules.yaml").write_text(broken)
    tests = promtool_tests(cases, all_rules(shipped), "rules.yaml")
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests))
    result = run([str(promtool), "test", "rules", "tests.yaml"], tmp_path)
    assert result.returncode != 0 and "one sample less" in result.stdout + result.stderr, result.stdout
