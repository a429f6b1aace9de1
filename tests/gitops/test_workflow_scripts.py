"""The workflows' own shell steps, run with bash as GitHub runs them (`bash -eo pipefail`):
the comment pr.yml composes around the real diff, and the checks pr-comment.yml applies to
the untrusted artifact (GitHub's API stands in as a `gh` script on PATH)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT

from .conftest import WORKFLOWS, load_yaml

TESTED_SHA = "0123456789abcdef0123456789abcdef01234567"


def _step(workflow: str, step_id: str) -> dict[str, Any]:
    document = load_yaml(WORKFLOWS / f"{workflow}.yml")
    steps = [s for job in document["jobs"].values() for s in job["steps"]]
    step: dict[str, Any] = next(s for s in steps if s.get("id") == step_id)
    return step


def _run(script: str, tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    output = tmp_path / "github-output"
    output.touch()
    path = os.pathsep.join([str(tmp_path / "bin"), str(Path(sys.executable).parent), os.environ["PATH"]])
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=ROOT,
        env={**os.environ, "PATH": path, "RUNNER_TEMP": str(tmp_path), "GITHUB_OUTPUT": str(output), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = output.read_text().splitlines()
    return done, dict(line.split("=", 1) for line in lines if "=" in line)


def test_pr_comment_body_has_the_checks_then_the_real_diff(tmp_path: Path) -> None:
    (tmp_path / "render.txt").write_text("rendered/dev/kueue/cohort-dev.yaml: stale\n")
    (tmp_path / "validate.txt").write_text("total: 3 environments, 0 findings\n")
    done, outputs = _run(
        _step("pr", "diff")["run"],
        tmp_path,
        PR_NUMBER="42",
        HEAD_SHA=TESTED_SHA,
        RENDER="failure",
        VALIDATE="success",
        RUN_URL="https://github.example/run/1",
    )
    assert done.returncode == 0, done.stderr
    assert outputs == {"outcome": "success"}
    comment = tmp_path / "pr-comment"
    assert sorted(p.name for p in comment.iterdir()) == ["body.md", "pr-number"]
    assert (comment / "pr-number").read_text() == "42\n"
    body = (comment / "body.md").read_text()
    assert body.startswith("#### trainyard checks for 0123456 ([log](https://github.example/run/1))")
    assert "| `render --check` (rendered/ matches the environment files) | **failed** |" in body
    assert "| `validate` (schemas, kubeconform, policies) | passed |" in body
    assert "rendered/dev/kueue/cohort-dev.yaml: stale" in body  # the failed check's output
    assert "total: 3 environments" not in body  # a passing check's output is not
    assert "<!-- trainyard-diff -->" in body and "## trainyard diff" in body
    assert body.index("| check |") < body.index("## trainyard diff")


def test_pr_comment_body_ends_with_the_whatif_jobs_report(tmp_path: Path) -> None:
    """What the what-if job left (download-artifact puts it in $RUNNER_TEMP/whatif) closes
    the comment; with nothing there, staging's configured trace is named as not replayed."""
    checks = {"PR_NUMBER": "42", "HEAD_SHA": TESTED_SHA, "RENDER": "success", "VALIDATE": "success"}
    report = "### what-if staging: traces/staging.yaml at speed 144 (times are trace time)\n\n| team |\n"
    (tmp_path / "whatif").mkdir()
    (tmp_path / "whatif" / "staging.md").write_text(report)
    done, outputs = _run(
        _step("pr", "diff")["run"], tmp_path, RUN_URL="https://github.example/run/1", **checks
    )
    assert done.returncode == 0 and outputs == {"outcome": "success"}, done.stderr
    body = (tmp_path / "pr-comment" / "body.md").read_text()
    assert body.endswith("\n\n### What-if\n\n" + report), body[-500:]
    (tmp_path / "whatif" / "staging.md").unlink()
    done, _ = _run(_step("pr", "diff")["run"], tmp_path, RUN_URL="https://github.example/run/1", **checks)
    body = (tmp_path / "pr-comment" / "body.md").read_text()
    assert "`staging`: **no result**: the what-if replay of `traces/staging.yaml` failed or ran out" in body


@pytest.fixture
def artifact(tmp_path: Path) -> Path:
    """What download-artifact leaves, plus a `gh` that reports the PR's head commit."""
    folder = tmp_path / "pr-comment"
    folder.mkdir()
    (folder / "pr-number").write_text("42\n")
    (folder / "body.md").write_text("#### trainyard checks\n")
    (tmp_path / "bin").mkdir()
    gh = tmp_path / "bin" / "gh"
    gh.write_text('#!/bin/sh\n[ "$1 $2" = "api repos/o/r/pulls/42" ] || exit 2\necho "$PR_HEAD"\n')
    gh.chmod(0o755)
    return folder


def _check(artifact: Path, pr_head: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    return _run(
        _step("pr-comment", "pr")["run"],
        artifact.parent,
        GH_TOKEN="t",
        REPO="o/r",
        TESTED_SHA=TESTED_SHA,
        DIR=str(artifact),
        PR_HEAD=pr_head,
    )


def test_comment_goes_to_the_pr_whose_head_was_tested(artifact: Path) -> None:
    done, outputs = _check(artifact, TESTED_SHA)
    assert done.returncode == 0, done.stderr
    assert outputs == {"number": "42", "post": "true"}
    assert (artifact / "body.md").read_text() == "#### trainyard checks\n"


def test_no_comment_when_the_pr_moved_on(artifact: Path) -> None:
    done, outputs = _check(artifact, "f" * 40)
    assert done.returncode == 0, done.stderr
    assert outputs == {"post": "false"}
    assert "not commenting" in done.stdout


@pytest.mark.parametrize("number", ["42; rm -rf /", "", "-1", "1234567890"])
def test_a_pr_number_that_is_not_digits_is_refused(artifact: Path, number: str) -> None:
    (artifact / "pr-number").write_text(number)
    done, outputs = _check(artifact, TESTED_SHA)
    assert done.returncode == 1 and "not a number" in done.stdout
    assert outputs == {}


def test_an_oversized_body_is_cut_with_a_note(artifact: Path) -> None:
    (artifact / "body.md").write_text("x" * 100_000)
    done, outputs = _check(artifact, TESTED_SHA)
    assert done.returncode == 0, done.stderr
    body = (artifact / "body.md").read_text()
    assert len(body) <= 65_000 and body.startswith("x" * 60_000)
    assert body.rstrip().endswith("locally for the rest.")
    assert outputs["post"] == "true"


def test_sync_inventory_lists_every_environment_file(tmp_path: Path) -> None:
    """The matrix comes from environments/, bases (_defaults.yaml) left out."""
    done, outputs = _run(_step("sync-inventory", "list")["run"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert outputs == {"names": '["dev", "prod", "staging"]'}


def test_sync_inventory_skips_a_cluster_without_its_secret(tmp_path: Path) -> None:
    done, outputs = _run(
        _step("sync-inventory", "nodes")["run"],
        tmp_path,
        KUBECONFIG_DATA="",
        SECRET_NAME="KUBECONFIG",
        ENV_NAME="dev",
    )
    assert done.returncode == 0, done.stderr
    assert outputs == {"ready": "false"}
    assert "::notice::secret KUBECONFIG is not set in the GitHub environment dev: not synced" in done.stdout
