"""A scratch copy of the repository for tests of the render pipeline: make one with an
environment file of the test's choosing, run the CLI in-process against it, digest a tree."""

from __future__ import annotations

import contextlib
import hashlib
import io
import shutil
from pathlib import Path

from generators import cli
from tests.conftest import ROOT


def repo_with(root: Path, env_text: str) -> Path:
    """`root` as a repository whose only environment, `bad`, is `env_text` (extending the
    shipped _defaults.yaml), with a copy of the committed rendered/."""
    (root / "environments").mkdir()
    shutil.copy(ROOT / "environments" / "_defaults.yaml", root / "environments")
    (root / "environments" / "bad.yaml").write_text(env_text)
    shutil.copytree(ROOT / "rendered", root / "rendered")
    return root


def run_cli(root: Path, *argv: str) -> tuple[int, str, str]:
    """Run generate.py with `root` as the repository root; returns (exit, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    original = cli.ROOT
    cli.ROOT = root
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(list(argv))
            except SystemExit as exc:  # argparse usage errors
                code = int(exc.code or 0)
    finally:
        cli.ROOT = original
    return code, out.getvalue(), err.getvalue()


def tree_digest(folder: Path) -> str:
    """A digest of every file path and byte under `folder` (empty string if absent)."""
    if not folder.exists():
        return ""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()
