"""The three outputs of `generate.py diff`: markdown (size limit, structure), text (colour
rules on a real terminal), json (shape); and secret masking."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from generators.diff import markdown
from generators.diff.changes import ObjectChange
from generators.diff.fields import changed_fields
from generators.diff.objects import key_of
from tests.support import ROOT
from tests.workflow.conftest import change_prod, commit_all, edit, generate, git

ESC = "\x1b["


def _many_teams(path: Path, count: int) -> None:
    """prod with `count` training teams sharing the H100 pools 1% each (as many as fit)."""
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    teams = [
        {
            "name": f"team-{i:03d}",
            "namespaces": [f"team-{i:03d}"],
            "cohort": "training",
            "shares": {"train-h100-a": 1, "train-h100-b": 1},
            "maxUsagePercent": 50,
        }
        for i in range(count)
    ]
    serving = next(t for t in spec["teams"] if t["name"] == "serving")  # overflow refers to it
    teams.append({**serving, "shares": {"infer-l40s": 100}})
    spec["teams"] = teams
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")


def test_markdown_stays_under_the_limit_on_a_huge_change(repo: Path) -> None:
    git(repo, "checkout", "-q", "main")
    _many_teams(repo / "environments" / "prod.yaml", 100)
    generate(repo, "render")
    commit_all(repo, "prod: 100 teams")
    git(repo, "checkout", "-q", "-b", "huge")
    prod = repo / "environments" / "prod.yaml"
    spec = yaml.safe_load(prod.read_text(encoding="utf-8"))
    for pool in spec["pools"]:
        pool["nodes"] *= 10
    prod.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")

    comment = generate(repo, "diff", "--format", "markdown").stdout
    assert len(comment) <= markdown.COMMENT_LIMIT
    counts = json.loads(generate(repo, "diff", "--format", "json").stdout)
    env = next(e for e in counts["environments"] if e["name"] == "prod")
    total = sum(env["counts"].values())
    note = re.search(
        r"_(\d+) of (\d+) per-object diffs omitted to keep this comment under GitHub's "
        r"65,536-character limit\. See them all locally: `python generate\.py diff --base "
        r"[0-9a-f]{12}`\._",
        comment,
    )
    assert note is not None, comment[-2000:]
    omitted, announced = int(note[1]), int(note[2])
    assert announced == total > 100
    shown = comment.count("<details><summary>🟡 changed")
    assert 0 < shown == total - omitted
    assert "**Capacity per pool**" in comment and "| train-h100-a | changed |" in comment


def test_markdown_comment_structure(repo: Path) -> None:
    change_prod(repo)
    comment = generate(repo, "diff", "--format", "markdown").stdout
    assert comment.startswith(markdown.MARKER + "\n## trainyard diff: 1 environment changed\n")
    assert "### `prod`: " in comment and "### `staging`" not in comment
    row = (
        r"^\| research \| train-h100-a \| changed \| 20% → 15% \| \d+ → \d+ \| nvidia\.com/gpu \| "
        r"\d+ → \d+ \|"
    )
    assert re.search(row, comment, re.M)
    assert "```mermaid\nflowchart LR\n" in comment and "c_training --> q_research" in comment
    assert "<details><summary>🟡 changed <code>ClusterQueue.kueue.x-k8s.io research</code>" in comment
    assert "```diff\n--- a/rendered/prod/kueue/clusterqueue-research.yaml\n" in comment
    assert comment.count("<details>") == comment.count("</details>")


def _on_a_terminal(repo: Path, *args: str, env: dict[str, str]) -> str:
    """Run diff with stdout on a real pseudo-terminal and return what it wrote."""
    controller, terminal = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | env
    with subprocess.Popen(
        [sys.executable, str(ROOT / "generate.py"), "-C", str(repo), "diff", *args],
        cwd=repo,
        stdout=terminal,
        stderr=subprocess.PIPE,
        env=environ,
    ) as proc:
        os.close(terminal)
        chunks = []
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert proc.wait() == 0
    os.close(controller)
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_unless_no_color(repo: Path) -> None:
    change_prod(repo)
    assert ESC in _on_a_terminal(repo, env={})
    plain = _on_a_terminal(repo, env={"NO_COLOR": "1"})
    assert ESC not in plain and "research [train-h100-a]" in plain
    assert ESC not in _on_a_terminal(repo, "--no-color", env={})
    assert ESC not in generate(repo, "diff").stdout  # a pipe is not a terminal


def _documented_excerpt() -> Any:
    """The excerpt of the real JSON that docs/workflow.md shows (its JSON schema section), for
    the same change as change_prod: the document's keys, trimmed to one environment, one row
    per list and one field."""
    text = (ROOT / "docs" / "workflow.md").read_text(encoding="utf-8")
    after = text.split("An excerpt of the real JSON", 1)[1]
    return json.loads(after.split("```json\n", 1)[1].split("```", 1)[0])


def _same_keys(real: Any, documented: Any, where: str = "$") -> None:
    """Every object of `documented` has exactly its keys in `real`, level by level (a list by
    its first item, where the documented list has one)."""
    if isinstance(documented, dict):
        assert isinstance(real, dict) and set(real) == set(documented), (where, real)
        for key, value in documented.items():
            _same_keys(real[key], value, f"{where}.{key}")
    elif isinstance(documented, list) and documented:
        assert isinstance(real, list) and real, (where, real)
        _same_keys(real[0], documented[0], f"{where}[0]")


def test_json_shape(repo: Path) -> None:
    """The document has the keys docs/workflow.md documents, at every level (so the two
    cannot drift apart), for the change its example makes: change_prod, and the overflow gate
    opening below 24 free GPUs instead of 16."""
    change_prod(repo)
    edit(repo / "environments" / "prod.yaml", "openWhenFreeGpusBelow: 16 ", "openWhenFreeGpusBelow: 24 ")
    doc = json.loads(generate(repo, "diff", "--format", "json").stdout)
    assert doc["schemaVersion"] == 1
    assert [e["name"] for e in doc["environments"]] == ["dev", "prod", "staging"]
    prod = doc["environments"][1]
    _same_keys({**doc, "environments": [prod]}, _documented_excerpt())
    assert prod["summary"]["pools"][0]["nodes"] == {"before": 256, "after": 240}


def _change(before: dict[str, Any], after: dict[str, Any]) -> ObjectChange:
    return ObjectChange(
        "changed",
        key_of("prod", after),
        "rendered/prod/x/secret.yaml",
        before,
        after,
        tuple(changed_fields(before, after)),
    )


def test_secret_like_values_are_masked_but_said_to_change() -> None:
    meta = {"name": "creds", "namespace": "gate"}
    secret = _change(
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {"token": "czNjcjN0"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {"token": "bjN3c2VjcmV0"}},
    )
    config = _change(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta,
            "data": {"api-token": "hunter2", "workers": "3"},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta,
            "data": {"api-token": "hunter3", "workers": "4"},
        },
    )
    details = markdown.object_details(secret) + markdown.object_details(config)
    for value in ("czNjcjN0", "bjN3c2VjcmV0", "hunter2", "hunter3"):
        assert value not in details
    assert "data.token: changed (masked)" in details and "data.api-token: changed (masked)" in details
    assert '\n-  workers: "3"\n' in details and '\n+  workers: "4"\n' in details  # not a credential
    assert '\n-  token: "<masked>"\n+  token: "<masked: changed>"\n' in details
    assert '\n+  api-token: "<masked: changed>"\n' in details


def test_max_chars_leaves_room_for_a_wrapper(repo: Path) -> None:
    change_prod(repo)
    full = generate(repo, "diff", "--format", "markdown").stdout
    for limit in (len(full) // 2, 300):
        text = generate(repo, "diff", "--format", "markdown", "--max-chars", str(limit)).stdout
        assert len(text) <= limit
    half = generate(repo, "diff", "--format", "markdown", "--max-chars", str(len(full) // 2)).stdout
    assert (
        f"per-object diffs omitted to keep this comment under the {len(full) // 2:,}-character limit" in half
    )
    assert "| research | train-h100-a | changed | 20% → 15% |" in half  # the summary survives
