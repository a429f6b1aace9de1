"""The messages a new user meets in the first hour. Each test feeds an input a newcomer
wrote and asserts the whole new line, the exit code and that nothing
was written. (Single-file mistakes are in tests/corpus/bad too: indentation, tabs, empty and
comment-only files, an extends cycle, a share of a removed pool.)"""

from __future__ import annotations

from pathlib import Path

from tests.support import CORPUS, ROOT
from tests.support.inventory import inventory
from tests.support.scratch import copy_repo, repo_with, run_cli, tree_digest


def _fails(root: Path, *argv: str) -> str:
    before = tree_digest(root / "rendered")
    code, out, err = run_cli(root, *argv)
    assert code == 1 and "Traceback" not in err, (out, err)
    assert tree_digest(root / "rendered") == before
    return err


def test_empty_file_is_not_about_separators(tmp_path: Path) -> None:
    err = _fails(repo_with(tmp_path, ""), "render", "bad")
    assert err == (
        "environments/bad.yaml:1:1: error: the file is empty (nothing but comments or blank "
        "lines); an environment needs at least name, cluster, pools, teams and priorities; "
        "environments/dev.yaml is a small example\n"
    )


def test_bad_utf8_points_at_the_line(tmp_path: Path) -> None:
    root = repo_with(tmp_path, "")
    text = (CORPUS / "valid-minimal.yaml").read_bytes().replace(b"model: H100", b"model: H\xe9100")
    (root / "environments" / "bad.yaml").write_bytes(text)
    err = _fails(root, "render", "bad")
    assert err == (
        "environments/bad.yaml:7:19: error: not UTF-8: byte 0xe9 here is not valid UTF-8; "
        "save the file as UTF-8 (it looks like Latin-1 or Windows-1252)\n"
    )


def test_extends_cycle_prints_the_chain(tmp_path: Path) -> None:
    root = repo_with(tmp_path, "extends: _a.yaml\n")
    (root / "environments" / "_a.yaml").write_text("extends: _b.yaml\n")
    (root / "environments" / "_b.yaml").write_text("# loops back\nextends: _a.yaml\n")
    err = _fails(root, "render", "bad")
    assert err == (
        "environments/_b.yaml:2:10: error: extends: forms a cycle: bad.yaml -> _a.yaml -> "
        "_b.yaml -> _a.yaml (extends); one of these files must not extend the next "
        "[extended by bad]\n"
    )


def test_typo_in_defaults_is_reported_once_naming_who_extends_it(tmp_path: Path) -> None:
    root = copy_repo(tmp_path / "repo")
    defaults = root / "environments" / "_defaults.yaml"
    lines = defaults.read_text().splitlines(keepends=True)
    line = next(i for i, text in enumerate(lines) if text.startswith("kueue:"))
    lines[line] = lines[line].replace("kueue:", "kueuee:")
    defaults.write_text("".join(lines))
    err = _fails(root, "render")
    assert err == (
        f"environments/_defaults.yaml:{line + 1}:1: error: unknown key 'kueuee' (kueuee); "
        "did you mean 'kueue'? [extended by dev, prod, staging]\n"
    )


def test_render_check_says_what_it_checked() -> None:
    code, out, err = run_cli(ROOT, "render", "--check")
    assert (code, err) == (0, "")
    assert out == "render --check: rendered/ matches 3 environment(s) (dev, prod, staging)\n"


def test_misspelt_option_gets_the_commands_usage() -> None:
    code, out, err = run_cli(ROOT, "render", "--chek")
    assert code == 2 and out == ""
    assert err == (
        "usage: generate.py render [-h] [--check] [ENV ...]\n"
        "generate.py render: error: unrecognized arguments: --chek; did you mean --check?\n"
    )


def test_sync_inventory_reads_kubectl_yaml(tmp_path: Path) -> None:
    """`kubectl get nodes -o yaml` is accepted as well as -o json (it gave `not JSON`)."""
    import yaml

    from generators.model.load import load

    root = repo_with(tmp_path, (CORPUS / "valid-minimal.yaml").read_text())
    env = load(root, "bad")
    nodes = root / "nodes.yaml"
    nodes.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": inventory(env, {"train": 6})})
    )
    code, out, err = run_cli(root, "sync-inventory", "bad", "--nodes", str(nodes))
    assert code == 0, err
    assert "train: 4 -> 6 nodes" in out
    garbage = root / "garbage.txt"
    garbage.write_text("NAME STATUS\n{broken: [\n")
    code, _, err = run_cli(root, "sync-inventory", "bad", "--nodes", str(garbage))
    assert code == 1
    assert err == (
        f"{garbage}: error: not JSON (line 1, column 1): Expecting value; not YAML either: "
        "save `kubectl get nodes -o json` (or -o yaml) to the file\n"
    )
