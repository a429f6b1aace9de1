"""Floods in the diff. Long PromQL lines once printed whole (2,500 characters),
a truncated PrometheusRule change showed two identical prefixes, and generated dashboards
and rules filled half of a 50 KB PR comment with raw single-line diffs."""

from __future__ import annotations

from pathlib import Path

from generators.diff import textdiff
from tests.workflow.conftest import commit_all, generate


def test_long_strings_show_where_they_differ() -> None:
    head = 'sum(kube_node_status_allocatable{resource="nvidia_com_gpu"}) - ' * 40  # ~2,500 chars
    before, after = head + "vector(16) > 78", head + "vector(16) > 80"
    old, new, at = textdiff.narrow(before, after)
    assert at == len(head) + len("vector(16) > ")  # "78" and "80" differ from the "7"
    assert old != new and old.endswith("> 78") and new.endswith("> 80")
    assert len(old) < 80 and old.startswith("…")
    lines = textdiff.narrow_lines([f"-    expr: {before}\n", f"+    expr: {after}\n", " context\n"], 200)
    assert lines[0] == f"-{old}  [from column {at + 11}]\n" and lines[2] == " context\n"


def _hotter(repo: Path) -> None:
    prod = repo / "environments" / "prod.yaml"
    text = prod.read_text()
    assert "\nmonitoring:\n" in text  # prod names its exporters there; add the threshold to it
    prod.write_text(text.replace("\nmonitoring:\n", "\nmonitoring:\n  gpuTempLimitCelsius: 80\n", 1))
    generate(repo, "render")
    commit_all(repo, "prod: GPUs may run to 80 °C")


def test_dashboards_and_rules_summarised_by_what_changed(repo: Path) -> None:
    _hotter(repo)
    text = generate(repo, "diff", "--base", "main", "--no-color").stdout
    assert "alert GPUTemperatureHigh: threshold 78 -> 80 in the expression, annotations changed" in text
    assert 'panel "GPU temperature": thresholds 78 -> 80' in text
    assert 'panel "GPUs above 80 °C": title was "GPUs above 78 °C", threshold 78 -> 80 in the queries' in text
    assert "spec.groups[0].rules[0].expr: changed from character 89 of 90: " in text
    assert max(len(line) for line in text.splitlines()) <= 250
    md = generate(repo, "diff", "--base", "main", "--format", "markdown").stdout
    visible = md.split("<details><summary>raw diff", 1)[0]
    assert "- alert GPUTemperatureHigh: threshold 78 -> 80 in the expression, annotations changed" in visible
    assert "<details><summary>raw diff, 1 field</summary>" in md


def test_long_setting_shows_where_it_changed() -> None:
    """The overflow summary printed the whole free-GPU query on both sides (779 columns)."""
    from generators.diff import wording
    from generators.diff.summary import Delta, SettingSummary

    query = 'sum(kube_node_status_allocatable{resource="nvidia_com_gpu",node!~"vk-lambda|vk-azure"}) - x' * 3
    row = SettingSummary("gate: free-GPU query", Delta(query, query.replace("vk-azure", "vk-azure2", 1)))
    line = wording.setting(row)
    assert line.startswith("gate: free-GPU query changed from character 85: …")
    assert '"vk-lambda|vk-azure"})' in line and '"vk-lambda|vk-azure2"})' in line
    assert len(line) < 250
