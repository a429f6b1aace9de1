"""The object diff matches list items by their natural key. Inserting a
pool before another used to read `flavors[2].name: "infer-l40s" -> "train-b200"`,
`nominalQuota: "96" -> "0"`: a team seemingly losing its L40S quota."""

from __future__ import annotations

import json
from pathlib import Path

from generators.diff.fields import MISSING, changed_fields, format_path
from tests.workflow.conftest import commit_all, edit, generate

B200 = """  - name: train-b200
    role: training
    gpu: {model: B200-180GB, perNode: 8}
    nodes: 16
    cpu: 224
    memory: 2000Gi
    nodeLabels: {trainyard.dev/pool: train-b200}
  - name: infer-l40s
"""


def test_inserted_pool_is_an_added_flavor_not_a_renamed_one(repo: Path) -> None:
    prod = repo / "environments" / "prod.yaml"
    edit(prod, "  - name: infer-l40s\n", B200)
    edit(
        prod,
        "shares: {train-h100-a: 20, train-h100-b: 20}\n    borrowFrom: [infer-l40s]",
        "shares: {train-h100-a: 20, train-h100-b: 20, train-b200: 100}\n    borrowFrom: [infer-l40s]",
    )
    generate(repo, "render")
    commit_all(repo, "prod: a B200 pool for research")
    doc = json.loads(generate(repo, "diff", "--base", "main", "--format", "json").stdout)
    prod_env = next(e for e in doc["environments"] if e["name"] == "prod")
    flex = next(o for o in prod_env["objects"] if o["name"] == "research-flex")
    paths = [f["path"] for f in flex["fields"]]
    assert paths == ["spec.resourceGroups[0].flavors[0]"], paths  # B200 comes first: pool order
    assert flex["fields"][0]["beforePresent"] is False
    assert flex["fields"][0]["after"]["name"] == "train-b200"
    text = generate(repo, "diff", "--base", "main", "--no-color").stdout
    assert 'flavors[0]: added {"name":"train-b200"' in text
    assert "infer-l40s" not in "".join(line for line in text.splitlines() if "research-flex" in line)
    assert '"infer-l40s" -> "train-b200"' not in text


def test_taints_match_by_key_and_effect() -> None:
    before = {"nodeTaints": [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoSchedule"}]}
    after = {
        "nodeTaints": [
            {"key": "b", "effect": "NoSchedule"},
            {"key": "b", "effect": "PreferNoSchedule"},
            {"key": "a", "effect": "NoSchedule", "value": "1"},
        ]
    }
    shown = [(format_path(c.path), c.before, c.after) for c in changed_fields(before, after)]
    assert shown == [
        (
            "nodeTaints",
            ["key=a,effect=NoSchedule", "key=b,effect=NoSchedule"],
            ["key=b,effect=NoSchedule", "key=a,effect=NoSchedule"],
        ),  # order alone is a change
        ("nodeTaints[1]", MISSING, {"key": "b", "effect": "PreferNoSchedule"}),
        ("nodeTaints[2].value", MISSING, "1"),
    ]


def test_scalar_lists_align_and_unkeyed_lists_stay_by_index() -> None:
    changes = changed_fields({"args": ["--a", "--b"]}, {"args": ["--b"]})
    assert [(format_path(c.path), c.before, c.after) for c in changes] == [("args[0]", "--a", MISSING)]
    changes = changed_fields({"v": ["a", "c"]}, {"v": ["a", "b", "c"]})
    assert [(format_path(c.path), c.before, c.after) for c in changes] == [("v[1]", MISSING, "b")]
    changes = changed_fields({"c": [{"x": 1}, {"x": 2}]}, {"c": [{"x": 2}]})
    assert [(format_path(c.path), c.before, c.after) for c in changes] == [
        ("c[0].x", 1, 2),
        ("c[1]", {"x": 2}, MISSING),
    ]
