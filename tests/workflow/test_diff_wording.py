"""Before/after wording. A new team (or flavor) once read `borrowing limit
none -> 96` while the legend says `none` means "no limit", and Mermaid drew `0 -> 0 GPUs` on
queues that gained a zero-quota borrowFrom flavor and outlined them as changed."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.workflow.conftest import commit_all, edit, generate

SPEECH = """  - name: speech
    namespaces: [speech]
    cohort: training
    shares: {train-h100-a: 5}
    borrowFrom: [infer-l40s]
    maxUsagePercent: 50
  - name: evals
"""


def _new_team(repo: Path) -> None:
    prod = repo / "environments" / "prod.yaml"
    edit(prod, "  - name: evals\n", SPEECH)
    edit(prod, "shares: {train-h100-a: 20, train-h100-b: 20}", "shares: {train-h100-a: 15, train-h100-b: 20}")
    generate(repo, "render")
    commit_all(repo, "prod: team speech")


def test_new_team_says_new_not_none(repo: Path) -> None:
    _new_team(repo)
    text = generate(repo, "diff", "--base", "main", "--no-color").stdout
    assert (
        "speech [train-h100-a]: new share 5%, 12 nodes, nvidia.com/gpu 96, borrowing limit 896, "
        "lending limit none"
    ) in text
    assert (
        "speech [infer-l40s]: new share 0%, 0 nodes, nvidia.com/gpu 0, borrowing limit 248, "
        "lending limit none"
    ) in text
    assert "none ->" not in text
    doc = json.loads(generate(repo, "diff", "--base", "main", "--format", "json").stdout)
    prod = next(e for e in doc["environments"] if e["name"] == "prod")
    rows = {(q["team"], q["flavor"], q["resource"]): q for q in prod["summary"]["quotas"]}
    assert rows[("speech", "train-h100-a", "nvidia.com/gpu")]["change"] == "added"
    assert rows[("research", "train-h100-a", "nvidia.com/gpu")]["change"] == "changed"


def test_mermaid_unchanged_means_unchanged(repo: Path) -> None:
    _new_team(repo)
    md = generate(repo, "diff", "--base", "main", "--format", "markdown").stdout
    assert "| speech | train-h100-a | added | 5% | 12 | nvidia.com/gpu | 96 | 896 | none |" in md
    assert "none →" not in md
    chart = md[md.index("```mermaid") :]
    chart = chart[: chart.index("```\n", 10)]
    assert "0 → 0" not in chart
    assert "train-h100-a: new 96 GPUs" in chart
    outlined = re.search(r"class (\S+) changed", chart)
    assert outlined is not None
    # speech is new, research gave it 5% and evals gained a remainder node: only those moved
    assert set(outlined.group(1).split(",")) == {"q_speech", "q_research", "q_evals"}, chart
