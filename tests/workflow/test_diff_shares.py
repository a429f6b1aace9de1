"""A share change from 20 % to 25 % once showed only `400 -> 496`. The PR comment
(and text/JSON diff) show the share and the node count it became next to the quota."""

from __future__ import annotations

import json
from pathlib import Path

from tests.workflow.conftest import commit_all, edit, generate


def _share_change(repo: Path) -> None:
    prod = repo / "environments" / "prod.yaml"
    edit(prod, "shares: {train-h100-a: 20, train-h100-b: 20}", "shares: {train-h100-a: 20, train-h100-b: 25}")
    edit(prod, "shares: {train-h100-a: 15, train-h100-b: 20}", "shares: {train-h100-a: 15, train-h100-b: 15}")
    generate(repo, "render")
    commit_all(repo, "prod: research takes 5% of train-h100-b from video")


def test_share_change_shows_shares_and_nodes(repo: Path) -> None:
    _share_change(repo)
    md = generate(repo, "diff", "--base", "main", "--format", "markdown").stdout
    assert "| research | train-h100-b | changed | 20% → 25% | 50 → 62 | nvidia.com/gpu | 400 → 496 |" in md
    text = generate(repo, "diff", "--base", "main", "--no-color").stdout
    assert "research [train-h100-b]: share 20% -> 25%, 50 -> 62 nodes; nvidia.com/gpu 400 -> 496" in text
    doc = json.loads(generate(repo, "diff", "--base", "main", "--format", "json").stdout)
    prod = next(e for e in doc["environments"] if e["name"] == "prod")
    row = next(
        q for q in prod["summary"]["quotas"] if (q["team"], q["flavor"]) == ("research", "train-h100-b")
    )
    assert (row["share"], row["nodes"]) == ({"before": 20, "after": 25}, {"before": 50, "after": 62})


def test_plan_shows_shares_next_to_quotas(repo: Path) -> None:
    _share_change(repo)
    out = generate(repo, "plan", "prod").stdout
    research = [line.split() for line in out.splitlines() if line.startswith("research ")]
    assert research[1][:5] == ["research", "training", "train-h100-b", "25%", "62"]
    assert research[1][5] == "496"  # GPU quota next to the share and nodes it became
