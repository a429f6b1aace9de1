"""`generate.py diff` on a real repository with two commits: exactly the changed objects
and fields, summary numbers from the model, and the fallbacks (no main, old spec)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from generators.model.environment import Environment
from generators.model.load import load
from tests.workflow.conftest import change_prod, commit_all, edit, generate, git

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
LIMIT_FIELDS = (
    ("nominal", "nominalQuota"),
    ("borrowing_limit", "borrowingLimit"),
    ("lending_limit", "lendingLimit"),
)


def leaves(value: Any, path: str = "") -> dict[str, Any]:
    """Test oracle: every scalar of a YAML document by its path, in the documented notation."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            part = (f".{key}" if path else key) if _IDENTIFIER.fullmatch(key) else f'["{key}"]'
            out.update(leaves(item, path + part))
        return out
    if isinstance(value, list):
        out = {}
        for i, item in enumerate(value):
            out.update(leaves(item, f"{path}[{i}]"))
        return out
    return {path: value}


def committed(root: Path, rev: str, path: str) -> Any:
    return yaml.safe_load(git(root, "show", f"{rev}:{path}"))


def expected_queue_fields(before: Environment, after: Environment, team: str) -> set[str]:
    """Changed ClusterQueue paths derived from the two models (flavors and resources keep
    their order in this change)."""
    out = set()
    for i, (old, new) in enumerate(zip(before.team_flavors[team], after.team_flavors[team], strict=True)):
        for j, (q0, q1) in enumerate(zip(old.quotas, new.quotas, strict=True)):
            for attribute, field in LIMIT_FIELDS:
                if getattr(q0, attribute) != getattr(q1, attribute):
                    out.add(f"spec.resourceGroups[0].flavors[{i}].resources[{j}].{field}")
    return out


def two_commits(repo: Path) -> tuple[Environment, Environment]:
    before = load(repo, "prod")
    change_prod(repo)
    generate(repo, "render")
    commit_all(repo, "prod: fewer nodes, research gives 5% to video")
    return before, load(repo, "prod")


def test_reports_exactly_the_changed_objects_and_fields(repo: Path) -> None:
    before, after = two_commits(repo)
    doc = json.loads(generate(repo, "diff", "--format", "json").stdout)
    reported = {o["path"]: o for e in doc["environments"] for o in e["objects"]}
    changed_files = set(git(repo, "diff", "--name-only", "main", "HEAD", "--", "rendered").split())
    assert set(reported) == changed_files
    assert {o["change"] for o in reported.values()} == {"changed"}
    for path, obj in reported.items():
        old, new = leaves(committed(repo, "main", path)), leaves(committed(repo, "HEAD", path))
        oracle = {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}
        assert {f["path"] for f in obj["fields"]} == oracle, path
        if obj["kind"] == "ClusterQueue":
            assert oracle == expected_queue_fields(before, after, obj["name"]), path
    queues = {o["name"] for o in reported.values() if o["kind"] == "ClusterQueue"}
    assert queues == {t for t in after.team_flavors if after.team_flavors[t] != before.team_flavors[t]}
    assert "research" in queues and "serving" not in queues


def test_summary_line_has_the_models_numbers(repo: Path) -> None:
    before, after = two_commits(repo)
    out = generate(repo, "diff", "--no-color").stdout

    def gpus(env: Environment, team: str) -> int:
        flavor = next(f for f in env.team_flavors[team] if f.pool == "train-h100-a")
        return int(next(q.nominal for q in flavor.quotas if q.resource.name == "nvidia.com/gpu"))

    assert gpus(before, "research") != gpus(after, "research")
    assert (
        f"research [train-h100-a]: share 20% -> 15%, 50 -> 35 nodes; nvidia.com/gpu "
        f"{gpus(before, 'research')} -> {gpus(after, 'research')}" in out
    )
    pool_a = (before.pool("train-h100-a"), after.pool("train-h100-a"))
    assert (
        f"train-h100-a: nodes {pool_a[0].nodes} -> {pool_a[1].nodes}, reserve {pool_a[1].reserve_nodes}, "
        f"schedulable nvidia.com/gpu {pool_a[0].schedulable_gpus} -> {pool_a[1].schedulable_gpus}"
    ) in out
    assert "serving [" not in out  # untouched queues stay out of the summary
    assert re.search(r"^staging: no changes$", out, re.M)


def test_working_tree_is_rendered_in_memory_not_read_from_disk(repo: Path) -> None:
    change_prod(repo)  # not rendered, not committed: rendered/ on disk is stale
    doc = json.loads(generate(repo, "diff", "--format", "json").stdout)
    prod = next(e for e in doc["environments"] if e["name"] == "prod")
    assert prod["counts"]["changed"] > 0
    assert any(q["team"] == "research" for q in prod["summary"]["quotas"])


def test_no_change_means_no_objects(repo: Path) -> None:
    doc = json.loads(generate(repo, "diff", "--format", "json").stdout)
    assert doc["changed"] is False
    assert all(not e["objects"] and e["summaryNote"] is None for e in doc["environments"])


def test_added_and_removed_objects(repo: Path) -> None:
    prod = repo / "environments" / "prod.yaml"
    edit(prod, "namespaces: [foundation, foundation-ablations]", "namespaces: [foundation]")
    edit(prod, "namespaces: [evals]", "namespaces: [evals, evals-extra]")
    doc = json.loads(generate(repo, "diff", "--format", "json").stdout)
    objects = {
        (o["change"], o["kind"], o["namespace"] or "", o["name"])
        for e in doc["environments"]
        for o in e["objects"]
        if o["change"] != "changed"
    }
    assert {
        ("removed", "Namespace", "", "foundation-ablations"),
        ("added", "Namespace", "", "evals-extra"),
        ("removed", "LocalQueue", "foundation-ablations", "foundation"),
        ("added", "LocalQueue", "evals-extra", "evals"),
    } <= objects
    # Anything else added or removed lives in (or is) one of those two namespaces.
    for change, _kind, namespace, name in objects:
        expected = "evals-extra" if change == "added" else "foundation-ablations"
        assert expected in (namespace, name)


def test_base_spec_that_no_longer_loads_gives_object_diff_only(repo: Path) -> None:
    git(repo, "checkout", "-q", "main")
    edit(repo / "environments" / "prod.yaml", "name: prod\n", "name: prod\nretiredSetting: 3\n")
    commit_all(repo, "an old spec today's schema refuses")
    git(repo, "checkout", "-q", "-b", "fix")
    edit(repo / "environments" / "prod.yaml", "name: prod\nretiredSetting: 3\n", "name: prod\n")
    change_prod(repo)
    doc = json.loads(generate(repo, "diff", "--format", "json").stdout)
    prod = next(e for e in doc["environments"] if e["name"] == "prod")
    assert prod["summary"] is None
    assert "does not load with today's code" in prod["summaryNote"]
    assert "retiredSetting" in prod["summaryNote"]
    assert prod["counts"]["changed"] > 0
    staging = next(e for e in doc["environments"] if e["name"] == "staging")
    assert staging["summary"] is not None


def test_without_main_the_base_is_head(repo: Path) -> None:
    git(repo, "branch", "-q", "-D", "main")
    change_prod(repo)
    doc = json.loads(generate(repo, "diff", "--format", "json").stdout)
    assert doc["base"]["ref"] == "HEAD"
    assert doc["base"]["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert doc["changed"] is True


def test_explicit_base_and_unknown_ref(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD").strip()
    change_prod(repo)
    generate(repo, "render")
    commit_all(repo, "change")
    doc = json.loads(generate(repo, "diff", "--base", "HEAD", "--format", "json").stdout)
    assert doc["changed"] is False  # the working tree equals HEAD
    doc = json.loads(generate(repo, "diff", "--base", first[:10], "--format", "json").stdout)
    assert doc["base"]["commit"] == first and doc["changed"] is True
    done = generate(repo, "diff", "--base", "no-such-ref", check=2)
    assert done.stderr.strip() == "generate.py diff: error: unknown git ref 'no-such-ref'"


def test_invalid_working_tree_spec_is_a_finding(repo: Path) -> None:
    edit(repo / "environments" / "prod.yaml", "nodes: 64\n", "nodes: -1\n")
    done = generate(repo, "diff", check=1)
    assert done.stderr.startswith("environments/prod.yaml:")
    assert "Traceback" not in done.stderr


def test_gate_threshold_and_priority_changes_are_summarised(repo: Path) -> None:
    before = load(repo, "prod")
    edit(repo / "environments" / "prod.yaml", "openWhenFreeGpusBelow: 16 ", "openWhenFreeGpusBelow: 24 ")
    edit(repo / "environments" / "_defaults.yaml", "value: 900000", "value: 800000")
    after = load(repo, "prod")
    out = generate(repo, "diff").stdout
    assert before.overflow is not None and after.overflow is not None
    for old, new in zip(before.overflow.providers, after.overflow.providers, strict=True):
        line = (
            f"provider {new.name}: gate opens below free GPUs "
            f"{old.band.open_when_free_gpus_below} -> {new.band.open_when_free_gpus_below}"
        )
        assert line in out
    old_tier, new_tier = before.tiers[1], after.tiers[1]
    assert f"{new_tier.name}: priority {old_tier.value} -> {new_tier.value}" in out
    doc = json.loads(generate(repo, "diff", "--format", "json").stdout)
    for env in doc["environments"]:  # _defaults.yaml is shared: every environment changes
        tiers = env["summary"]["priorityTiers"]
        assert [t["name"] for t in tiers] == ["training"], env["name"]
        assert tiers[0]["value"] == {"before": old_tier.value, "after": new_tier.value}
    prod = next(e for e in doc["environments"] if e["name"] == "prod")
    assert {s["setting"] for s in prod["summary"]["overflow"]} >= {
        f"provider {p.name}: gate opens below free GPUs" for p in after.overflow.providers
    }
