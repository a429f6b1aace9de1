"""A cluster with a pool of another GPU (the trial's MI300X, `amd.com/gpu`) in the PR comment.

evals gets all of a 6-node MI300X pool with no topology: it lands in ClusterQueue
`evals-flex` (a team with topology pools keeps its plain pools there), which then covers
`amd.com/gpu` beside `nvidia.com/gpu`, so its L40S flavor carries an `amd.com/gpu` cell of 0.
- the cohort tree draws one box per ClusterQueue: `evals-flex` holds the 48 `amd.com/gpu`
  (6 x 8), `evals` none of them: a RayJob asking for them must name the -flex queue;
- `diff` lists no quota cell that is 0 on both sides and did not change (the `amd.com/gpu`
  cell of the L40S flavor when the L40S pool grows).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.workflow.conftest import commit_all, edit, generate

MI300X = """  - name: train-mi300x
    role: training
    gpu: {model: MI300X, perNode: 8, resource: amd.com/gpu}
    nodes: 6
    cpu: 192
    memory: 2000Gi
    nodeLabels: {trainyard.dev/pool: train-mi300x}

cohorts:
"""


def _with_mi300x(repo: Path) -> Path:
    prod = repo / "environments" / "prod.yaml"
    edit(prod, "\ncohorts:\n", "\n" + MI300X)
    edit(
        prod,
        "shares: {train-h100-a: 5, train-h100-b: 5, infer-l40s: 20}",
        "shares: {train-h100-a: 5, train-h100-b: 5, infer-l40s: 20, train-mi300x: 100}",
    )
    return prod


def _chart(markdown: str) -> str:
    chart = markdown[markdown.index("```mermaid") :]
    return chart[: chart.index("```\n", 10)]


def test_the_cohort_tree_shows_the_flex_queue_holding_the_amd_gpus(repo: Path) -> None:
    _with_mi300x(repo)
    generate(repo, "render")
    commit_all(repo, "prod: MI300X pool for evals")
    chart = _chart(generate(repo, "diff", "--base", "main", "--format", "markdown").stdout)
    boxes = dict(re.findall(r'^  (q_\S+)\["([^"]*)"\]', chart, re.M))
    assert "train-mi300x: new 48 amd.com/gpu" in boxes["q_evals_flex"].split("<br/>"), chart
    assert "train-mi300x" not in boxes["q_evals"], chart
    assert "  c_training --> q_evals_flex" in chart.splitlines()


def test_diff_omits_the_zero_cells_of_a_pool_without_the_resource(repo: Path) -> None:
    """evals and serving trade 5 % of the L40S pool: their L40S rows are listed, but not the
    `amd.com/gpu` cells the L40S flavor carries at 0 (the share moved, nothing they hold did)."""
    prod = _with_mi300x(repo)
    generate(repo, "render")
    commit_all(repo, "prod: MI300X pool for evals")
    edit(prod, "infer-l40s: 20, train-mi300x: 100}", "infer-l40s: 25, train-mi300x: 100}")
    edit(prod, "shares: {infer-l40s: 80}", "shares: {infer-l40s: 75}")
    generate(repo, "render")
    commit_all(repo, "prod: evals takes 5 % of the L40S pool from serving")
    text = generate(repo, "diff", "--base", "HEAD~1", "--no-color").stdout
    quotas = [
        line.strip() for line in text.splitlines() if line.startswith("    ") and "[infer-l40s]" in line
    ]
    assert quotas == [
        "evals [infer-l40s]: share 20% -> 25%, 12 -> 16 nodes; nvidia.com/gpu 96 -> 128; "
        "borrowing limit 48 -> 16",
        "serving [infer-l40s]: share 80% -> 75%, 50 -> 46 nodes; nvidia.com/gpu 400 -> 368",
    ], text
    markdown = generate(repo, "diff", "--base", "HEAD~1", "--format", "markdown").stdout
    assert "| amd.com/gpu |" not in markdown, markdown
