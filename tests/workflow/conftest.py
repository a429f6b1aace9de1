"""A real git repository per test: the environments copied, rendered and committed on main,
so `generate.py diff` reads real commits with real git. The CLI runs in this process against
that root (`run_cli`, as `generate.py -C ROOT` would): these tests are about what a command
says and writes, not about starting an interpreter, and an interpreter start plus a cold
import per call was half of `make test-fast` (docs/testing.md). The process boundary itself
(a real terminal, exit codes) keeps its own subprocess test (test_diff_formats.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.scratch import copy_repo, run_cli

# Data only: the code, templates and schemas always come from this checkout (run_cli).
COPIED = ("environments",)
GIT_IDENTITY = (
    "-c",
    "user.name=trainyard tests",
    "-c",
    "user.email=tests@trainyard.invalid",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "init.defaultBranch=main",
)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *GIT_IDENTITY, *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


@contextlib.contextmanager
def _environ(env: dict[str, str]) -> Iterator[None]:
    """os.environ without NO_COLOR (a caller's setting must not decide colour) plus `env`,
    restored afterwards."""
    saved = dict(os.environ)
    os.environ.pop("NO_COLOR", None)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def generate(
    root: Path, *args: str, env: dict[str, str] | None = None, check: int | None = 0
) -> subprocess.CompletedProcess[str]:
    """`generate.py -C root ARGS` in this process; `check` is the exit code expected (None:
    any). Output is captured, so stdout is no terminal, as with a pipe."""
    with _environ(env or {}):
        code, out, err = run_cli(root, *args)
    done = subprocess.CompletedProcess(["generate.py", "-C", str(root), *args], code, out, err)
    if check is not None:
        assert done.returncode == check, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def edit(path: Path, old: str, new: str) -> None:
    """Replace exactly one occurrence of `old`; fail loudly when the fixture drifted."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.fixture(scope="session")
def base_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_repo(tmp_path_factory.mktemp("base") / "repo", COPIED)
    generate(root, "render")
    git(root, "init", "-q")
    commit_all(root, "base: rendered tree")
    return root


@pytest.fixture
def repo(base_repo: Path, tmp_path: Path) -> Path:
    """A private copy of the base repository (on main, one commit), free to change."""
    root = tmp_path / "repo"
    shutil.copytree(base_repo, root, symlinks=True)
    git(root, "checkout", "-q", "-b", "change")
    return root


def change_prod(root: Path) -> None:
    """The everyday change: a pool loses 16 nodes, and two teams trade 5% of a pool."""
    prod = root / "environments" / "prod.yaml"
    edit(prod, "nodes: 256\n    reserveNodes: 8  # hot", "nodes: 240\n    reserveNodes: 8  # hot")
    edit(
        prod,
        "namespaces: [research]\n    cohort: training\n    shares: {train-h100-a: 20,",
        "namespaces: [research]\n    cohort: training\n    shares: {train-h100-a: 15,",
    )
    edit(
        prod,
        "namespaces: [video]\n    cohort: training\n    shares: {train-h100-a: 15,",
        "namespaces: [video]\n    cohort: training\n    shares: {train-h100-a: 20,",
    )
