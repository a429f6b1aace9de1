"""A scratch git repository of the shipped specs, and the shares change the what-if tests
replay (tests/whatif/test_cli.py through two boxes, test_pr_section.py through the PR's plan
and section): one home for both."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support import ROOT


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def committed(repo: Path, folders: tuple[str, ...]) -> Path:
    """`repo`: the checkout's `folders` as shipped, committed once as the base."""
    for folder in folders:
        shutil.copytree(ROOT / folder, repo / folder)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def shares_change(repo: Path) -> None:
    """Move 10 points of train-h100 from foundation to research in staging (50/30/20 -> 40/40/20)."""
    spec = repo / "environments" / "staging.yaml"
    text = spec.read_text(encoding="utf-8")
    assert text.count("shares: {train-h100: 50}") == 1 and text.count("shares: {train-h100: 30}") == 1
    for before in ("shares: {train-h100: 50}", "shares: {train-h100: 30}"):
        text = text.replace(before, "shares: {train-h100: 40}")
    spec.write_text(text, encoding="utf-8")
