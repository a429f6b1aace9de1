"""`generate.py diff` words a health change in people terms: how many nodes
of a pool quarantine may now take at once, what it was, and the pool's reserve; the
settings (backend, watched pools, fleet cap) by name. Literal expectations from the small
spec (tests/workflow/health_spec.py), on real commits."""

from __future__ import annotations

import json
from pathlib import Path

from tests.workflow.conftest import commit_all, edit, generate
from tests.workflow.health_spec import CAP, SMALL


def _small(repo: Path) -> Path:
    path = repo / "environments" / "small.yaml"
    path.write_text(SMALL)
    generate(repo, "render")
    commit_all(repo, "small: health on")
    return path


def test_a_pool_cap_change_says_how_many_nodes_quarantine_may_take(repo: Path) -> None:
    small = _small(repo)
    edit(small, CAP, "  cap: {maxNodes: 5, maxPercentOfPool: 3, pools: {train-h100: 3}}\n")
    generate(repo, "render")
    text = generate(repo, "diff", "--base", "HEAD", "--no-color").stdout
    section = text[text.index("  Health quarantine\n") :].splitlines()[:3]
    assert section == [
        "  Health quarantine",
        "    health: fleet cap, nodes at once 4 -> 5",
        "    pool train-h100 may now lose 3 nodes to quarantine at once (was 1; reserve 1): above its "
        "reserve, so quarantined nodes take capacity the quotas promise",
    ], text
    assert "train-gb200 may now" not in text  # its cap (1) did not move
    md = generate(repo, "diff", "--base", "HEAD", "--format", "markdown").stdout
    assert "- pool train-h100 may now lose 3 nodes to quarantine at once (was 1; reserve 1)" in md
    doc = json.loads(generate(repo, "diff", "--base", "HEAD", "--format", "json").stdout)
    env = next(e for e in doc["environments"] if e["name"] == "small")
    caps = env["summary"]["quarantineCaps"]
    assert [
        (c["pool"], c["capNodes"]["before"], c["capNodes"]["after"], c["reserveNodes"]["after"]) for c in caps
    ] == [("train-h100", 1, 3, 1)]


def test_watching_fewer_pools_says_what_is_no_longer_watched(repo: Path) -> None:
    small = _small(repo)
    edit(small, CAP, CAP + "  pools: [train-gb200]\n")
    generate(repo, "render")
    text = generate(repo, "diff", "--base", "HEAD", "--no-color").stdout
    assert "    health: watched pools train-gb200, train-h100 -> train-gb200\n" in text
    assert (
        "    pool train-h100 is no longer watched: quarantine takes none of its nodes "
        "(was up to 1 node at once)\n"
    ) in text
