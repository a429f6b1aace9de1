"""Alert rules: promtool check + test against the rendered rules, and mixin conventions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from generators.components.monitoring import RULES_NAME
from generators.model import exporters
from tests.monitoring.alert_cases import Builder, promtool_tests
from tests.monitoring.conftest import Shipped
from tests.monitoring.rendered_views import all_rules, rules_file_text, run
from tests.support import ROOT

DOCS = ROOT / "docs" / "monitoring.md"
HEALTH_DOCS = ROOT / "docs" / "health.md"  # runbooks of the trainyard-health group
CAMEL_CASE = re.compile(r"^[A-Z][A-Za-z0-9]+$")


def health_alerts(shipped: Shipped) -> set[str]:
    groups = yaml.safe_load(rules_file_text(shipped))["groups"]
    return {r["alert"] for g in groups if g["name"] == "trainyard-health" for r in g["rules"]}


def test_prometheusrule_and_rules_file_hold_the_same_groups(shipped: Shipped) -> None:
    rule = shipped.named("PrometheusRule", RULES_NAME)
    assert rule["spec"]["groups"] == yaml.safe_load(rules_file_text(shipped))["groups"]
    labels = rule["metadata"]["labels"]
    assert labels["release"] == shipped.spec["monitoring"]["release"]  # the stack's default ruleSelector
    for key, value in shipped.spec["monitoring"]["rules"]["labels"].items():
        assert labels[key] == value


def test_promtool_check_rules(shipped: Shipped, promtool: Path, tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(rules_file_text(shipped))
    result = run([str(promtool), "check", "rules", "rules.yaml"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(all_rules(shipped))} rules found" in result.stdout


@pytest.mark.slow  # promtool evaluates every alert case of a whole environment: 4 to 12 s each
def test_promtool_unit_tests(shipped: Shipped, promtool: Path, tmp_path: Path) -> None:
    cases = Builder(shipped.spec).all()
    (tmp_path / "rules.yaml").write_text(rules_file_text(shipped))
    (tmp_path / "tests.yaml").write_text(
        yaml.safe_dump(
            promtool_tests(cases, all_rules(shipped), "rules.yaml"), sort_keys=False, allow_unicode=True
        )
    )
    result = run([str(promtool), "test", "rules", "tests.yaml"], tmp_path)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    assert "SUCCESS" in result.stdout


def test_every_alert_fires_in_a_case_and_stays_silent_in_another(shipped: Shipped) -> None:
    cases = Builder(shipped.spec).all()
    alerts = {r["alert"] for r in all_rules(shipped)}
    firing = {c.alert for c in cases if c.fires}
    silent = {c.alert for c in cases if not c.fires}
    assert alerts == firing, f"alerts without a firing case: {alerts - firing}; unknown: {firing - alerts}"
    assert alerts == silent, f"alerts without a silent case: {alerts - silent}"


def test_a_wrong_threshold_fails_promtool(shipped: Shipped, promtool: Path, tmp_path: Path) -> None:
    """The unit tests are not tautological: move the temperature limit up by 2 °C in the
    rendered rules and the same cases must fail."""
    limit = shipped.spec["monitoring"]["gpuTempLimitCelsius"]
    text = rules_file_text(shipped)
    broken = text.replace(
        f'< {shipped.spec["monitoring"]["gpuTempPlausibleMaxCelsius"]}) > {limit}"',
        f'< {shipped.spec["monitoring"]["gpuTempPlausibleMaxCelsius"]}) > {limit + 2}"',
    )
    assert broken != text
    cases = [c for c in Builder(shipped.spec).all() if c.alert == "GPUTemperatureHigh"]
    (tmp_path / "rules.yaml").write_text(broken)
    (tmp_path / "tests.yaml").write_text(
        yaml.safe_dump(promtool_tests(cases, all_rules(shipped), "rules.yaml"))
    )
    result = run([str(promtool), "test", "rules", "tests.yaml"], tmp_path)
    assert result.returncode != 0


def test_mixin_conventions(shipped: Shipped) -> None:
    health = health_alerts(shipped)
    for rule in all_rules(shipped):
        name = rule["alert"]
        pattern = (shipped.spec["health"] if name in health else shipped.spec["monitoring"]["rules"])[
            "runbookUrlPattern"
        ]
        assert CAMEL_CASE.match(name), name
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}
        assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}
        assert rule["annotations"]["runbook_url"] == pattern.replace("%s", name.lower())


def test_every_alert_has_a_runbook_section() -> None:
    headings = set(re.findall(r"^### ([A-Za-z0-9]+)\s*$", DOCS.read_text(), flags=re.MULTILINE))
    from tests.monitoring.conftest import ENVIRONMENTS, load_shipped

    shipped = [load_shipped(name) for name in ENVIRONMENTS]
    health = {a for s in shipped for a in health_alerts(s)}
    alerts = {r["alert"] for s in shipped for r in all_rules(s)} - health
    assert alerts <= headings, f"alerts without a runbook section in docs/monitoring.md: {alerts - headings}"
    health_headings = set(re.findall(r"^### ([A-Za-z0-9]+)\s*$", HEALTH_DOCS.read_text(), flags=re.MULTILINE))
    assert health, "an environment renders the health alerts"
    missing = health - health_headings
    assert not missing, f"alerts without a runbook section in docs/health.md: {missing}"


def test_spec_defaults_are_the_talks_numbers() -> None:
    """78 °C for 2m, the XID replace list: the talk's numbers (docs/monitoring.md,
    ../shared/context/talk-digest.md)."""
    schema = yaml.safe_load((ROOT / "schemas" / "monitoring.schema.json").read_text())
    props = schema["properties"]
    assert props["gpuTempLimitCelsius"]["default"] == 78
    assert props["alerts"]["properties"]["gpuTempFor"]["default"] == "2m"
    default_dcgm = props["exporters"]["properties"]["dcgmExporter"]["default"]
    assert exporters.dcgm_exporter(default_dcgm).release.host_label == "Hostname"
    assert set(props["xidReplaceCodes"]["default"]) == {48, 63, 64, 74, 79, 94, 95}
