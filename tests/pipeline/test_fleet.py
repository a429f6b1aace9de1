"""Rendering several environments in a process pool (generators/pipeline/fleet.py): the same bytes as
one by one, and still all-or-nothing when one environment is bad."""

from __future__ import annotations

import shutil
from pathlib import Path

from generators.layout import environment_names
from generators.pipeline import fleet
from tests.support import ROOT
from tests.support.scratch import run_cli, tree_digest


def break_environment(root: Path, name: str) -> None:
    env = root / "environments" / f"{name}.yaml"
    env.write_text(env.read_text() + "notAField: 1\n")


def test_fleet_renders_the_committed_bytes_from_nothing(repo_copy: Path) -> None:
    shutil.rmtree(repo_copy / "rendered")
    code, out, err = run_cli(repo_copy, "render")
    assert code == 0, err
    assert out.startswith("rendered ")
    assert tree_digest(repo_copy / "rendered") == tree_digest(ROOT / "rendered")


def test_one_bad_environment_writes_nothing(repo_copy: Path) -> None:
    for name in ("dev", "prod"):  # an env rendered before and one after the bad one
        stale = next((repo_copy / "rendered" / name).rglob("*.yaml"))
        stale.write_text(stale.read_text() + "# edited\n")
    before = tree_digest(repo_copy / "rendered")
    break_environment(repo_copy, "staging")
    code, _, err = run_cli(repo_copy, "render")
    assert code == 1
    assert "environments/staging.yaml" in err
    assert tree_digest(repo_copy / "rendered") == before
    assert not [p.name for p in (repo_copy / "rendered").iterdir() if p.name.startswith(".")]


def test_one_bad_environment_leaves_no_rendered_dir_behind(repo_copy: Path) -> None:
    shutil.rmtree(repo_copy / "rendered")
    break_environment(repo_copy, "prod")
    assert run_cli(repo_copy, "render")[0] == 1
    assert not (repo_copy / "rendered").exists()


def test_pool_results_come_back_in_order_and_equal_one_by_one() -> None:
    names = environment_names(ROOT)
    pooled = fleet.map_environments(fleet.check_stale, ROOT, names)
    assert [o.name for o in pooled] == names
    assert pooled == [fleet.check_stale(ROOT, name) for name in names]
