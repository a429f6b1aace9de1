"""sync-inventory edits only the number tokens, so any layout survives byte
for byte (tests/corpus/sync: aligned values, 4-space lists, a flow pool with trailing spaces,
each also with CRLF line ends); where it still refuses, the error names file:line:col and why.
Each corpus file's first line is `# expect: ok` or the expected error after the file name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from generators.model.load import load
from tests.support import CORPUS
from tests.support.inventory import inventory
from tests.support.scratch import repo_with, run_cli

CASES = sorted((CORPUS / "sync").glob("*.yaml"))


def _sync(root: Path, grow: int) -> tuple[int, str, str]:
    env = load(root, "bad")
    items = inventory(env, {p.name: p.nodes + grow for p in env.pools})
    (root / "nodes.json").write_text(json.dumps({"kind": "List", "items": items}), encoding="utf-8")
    return run_cli(root, "sync-inventory", "bad", "--nodes", str(root / "nodes.json"))


@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_layout_survives_or_refusal_says_where(tmp_path: Path, case: Path, newline: str) -> None:
    text = case.read_text(encoding="utf-8")
    expect = text.split("\n", 1)[0].removeprefix("# expect: ")
    original = text.replace("\n", newline).encode()
    root = repo_with(tmp_path, "")
    env_file = root / "environments" / "bad.yaml"
    env_file.write_bytes(original)
    code, out, err = _sync(root, grow=2)
    assert "Traceback" not in err
    if expect == "ok":
        assert code == 0, err
        # exactly the number tokens moved: 4 -> 6, every other byte as it was
        count = len(re.findall(rb"nodes: +4\b", original))
        assert count == 1
        assert env_file.read_bytes() == re.sub(rb"(nodes: +)4\b", rb"\g<1>6", original)
        assert "wrote environments/bad.yaml" in out
    else:
        assert code == 1
        assert env_file.read_bytes() == original
        assert f"environments/bad.yaml:{expect}" in err.splitlines(), err
