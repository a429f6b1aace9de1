"""The committed rendered/ is exactly what the shipped environments render to."""

from __future__ import annotations

from pathlib import Path

import yaml

from generators.layout import environment_names
from generators.model.load import load
from generators.pipeline import render
from tests.support import ROOT
from tests.support.scratch import run_cli, tree_digest

SHIPPED = environment_names(ROOT)


def test_at_least_three_shipped_environments() -> None:
    assert {"prod", "staging", "dev"} <= set(SHIPPED)


def test_production_is_talk_sized() -> None:
    prod = load(ROOT, "prod")
    assert prod.gpus >= 4000
    assert len([p for p in prod.pools if p.role == "training"]) >= 2
    assert any(p.role == "inference" for p in prod.pools)
    assert len(prod.teams) >= 6


def test_committed_output_is_current() -> None:
    code, out, err = run_cli(ROOT, "render", "--check")
    assert code == 0, out + err
    assert out == "render --check: rendered/ matches 3 environment(s) (dev, prod, staging)\n"


def test_render_is_byte_identical_across_runs(repo_copy: Path) -> None:
    first = tree_digest(repo_copy / "rendered")
    assert run_cli(repo_copy, "render")[0] == 0
    assert tree_digest(repo_copy / "rendered") == first
    assert run_cli(repo_copy, "render")[0] == 0
    assert tree_digest(repo_copy / "rendered") == first


def test_check_reports_stale_missing_and_extra(repo_copy: Path) -> None:
    env_dir = repo_copy / "rendered" / "dev"
    stale = env_dir / "kueue" / "clusterqueue-sandbox.yaml"
    stale.write_text(stale.read_text().replace('nominalQuota: "8"', 'nominalQuota: "9"'))
    missing = env_dir / "kueue" / "cohort-dev.yaml"
    missing.unlink()
    (env_dir / "kueue" / "leftover.yaml").write_text("kind: Old\n")
    (repo_copy / "rendered" / "gone-env").mkdir()
    before = tree_digest(repo_copy / "rendered")
    code, out, _ = run_cli(repo_copy, "render", "--check")
    assert code == 1
    assert out.splitlines() == [
        "rendered/dev/kueue/clusterqueue-sandbox.yaml: stale",
        "rendered/dev/kueue/cohort-dev.yaml: missing",
        "rendered/dev/kueue/leftover.yaml: extra",
        "rendered/gone-env/: extra",
    ]
    assert tree_digest(repo_copy / "rendered") == before, "--check must write nothing"
    assert run_cli(repo_copy, "render")[0] == 0
    ok = "render --check: rendered/ matches 3 environment(s) (dev, prod, staging)\n"
    assert run_cli(repo_copy, "render", "--check") == (0, ok, "")
    assert not (repo_copy / "rendered" / "gone-env").exists()


def test_every_file_holds_one_object_that_reloads() -> None:
    for name in SHIPPED:
        for f in render.render_tree(load(ROOT, name)):
            assert yaml.safe_load(f.text) == f.obj
            if f.is_object:
                assert f.path.endswith(f"{f.obj['kind'].lower()}-{f.obj['metadata']['name']}.yaml")
            else:  # an installer input: a document for another installer, in installers/
                assert f.path.startswith("installers/") and "kind" not in f.obj, f.path


def test_node_count_change_flows_to_every_quota(repo_copy: Path) -> None:
    env = repo_copy / "environments" / "prod.yaml"
    env.write_text(env.read_text().replace("    nodes: 256\n", "    nodes: 200\n", 1))
    after = load(repo_copy, "prod")
    before = load(ROOT, "prod")
    pool = before.pools[0].name
    changed = [
        t.name for t in before.teams if any(f.pool == pool and f.nodes for f in before.team_flavors[t.name])
    ]
    assert changed
    for team in changed:
        old = next(f for f in before.team_flavors[team] if f.pool == pool)
        new = next(f for f in after.team_flavors[team] if f.pool == pool)
        assert new.nodes < old.nodes
        assert all(
            q_new.nominal < q_old.nominal
            for q_new, q_old in zip(new.quotas, old.quotas, strict=True)
            if q_old.nominal
        )
