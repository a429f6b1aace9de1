"""The bad-input corpus: each file gets one clear `path:line:col: error:` line, exit 1,
no traceback, and rendered/ stays byte-identical."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import CORPUS, ROOT
from tests.support.scratch import repo_with, run_cli, tree_digest

CASES = sorted((CORPUS / "bad").glob("*.yaml"))


def _expectation(case: Path) -> str:
    first = case.read_bytes().split(b"\n", 1)[0].decode("utf-8")
    assert first.startswith("# expect: "), f"{case.name} needs a '# expect:' first line"
    return first.removeprefix("# expect: ")


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_bad_input_is_one_clear_line(tmp_path: Path, case: Path) -> None:
    root = repo_with(tmp_path, "")
    (root / "environments" / "bad.yaml").write_bytes(case.read_bytes())  # bytes: not all are UTF-8
    before = tree_digest(root / "rendered")
    code, out, err = run_cli(root, "render", "bad")
    assert code == 1, (out, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines, "an error must be printed"
    first = lines[0]
    assert first.startswith("environments/bad.yaml:"), first
    assert _expectation(case) in first, first
    assert tree_digest(root / "rendered") == before
    assert not (root / "rendered" / "bad").exists()


def test_oversized_file(tmp_path: Path) -> None:
    valid = (CORPUS / "valid-minimal.yaml").read_text()
    root = repo_with(tmp_path, valid + "#" + "x" * 600_000 + "\n")
    code, _, err = run_cli(root, "render", "bad")
    assert code == 1
    assert err.startswith("environments/bad.yaml:1:1: error: file is ") and "limit" in err


def test_template_syntax_in_values_stays_data(tmp_path: Path) -> None:
    """Strings are data: Jinja syntax in a value is rendered literally, never evaluated."""
    text = (
        (CORPUS / "valid-minimal.yaml")
        .read_text()
        .replace("value: 1000}", 'value: 1000, description: "{{ 7*7 }} {% if 1 %}x{% endif %}"}')
    )
    root = repo_with(tmp_path, text)
    code, _, err = run_cli(root, "render", "bad")
    assert code == 0, err
    rendered = (root / "rendered" / "bad" / "priorities" / "priorityclass-train.yaml").read_text()
    assert 'description: "{{ 7*7 }} {% if 1 %}x{% endif %}"' in rendered
    assert "49" not in rendered


def test_valid_minimal_renders(tmp_path: Path) -> None:
    root = repo_with(tmp_path, (CORPUS / "valid-minimal.yaml").read_text())
    code, _, err = run_cli(root, "render", "bad")
    assert code == 0, err
    assert (root / "rendered" / "bad" / "kueue" / "clusterqueue-alpha.yaml").is_file()


def test_unknown_environment_is_usage_error(tmp_path: Path) -> None:
    code, _, err = run_cli(ROOT, "render", "nope", "--check")
    assert code == 2
    assert "unknown environment 'nope'" in err


def test_bad_flag_is_usage_error() -> None:
    code, _, _ = run_cli(ROOT, "render", "--frobnicate")
    assert code == 2
