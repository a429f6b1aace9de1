"""Scratch repositories: a temporary root the CLI or the model reads instead of this checkout.

Code always comes from the checkout; only data is copied. Three shapes, one helper each:
- `write_environment(root, name, text)`: environments/<name>.yaml beside the shipped
  _defaults.yaml (what an oracle, a property test or a control-plane scene renders);
- `repo_with(root, text)`: that, as the environment `bad`, plus a copy of the committed
  rendered/ (what a bad-input or CLI test runs `render`/`validate` against);
- `copy_repo(root, names)`: folders/files of the checkout copied as they are (the fleet of
  shipped environments, or the sources a subprocess `generate.py` runs from).
`run_cli` runs generate.py in-process against such a root; `tree_digest` proves a command
wrote nothing; `refused` is both, for a command that must refuse its input.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import shutil
from collections.abc import Iterable
from pathlib import Path

from generators import cli
from tests.support import ROOT

DEFAULTS = ROOT / "environments" / "_defaults.yaml"


def copy_repo(root: Path, names: Iterable[str] = ("environments", "rendered")) -> Path:
    """`root` with a copy of each of `names` (folders or files of the checkout; an absent one
    is left out, bytecode caches never copied)."""
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        source = ROOT / name
        if source.is_dir():
            # shutil.copy: bytes and mode, not timestamps (nothing reads them; copy2's
            # utime and xattr calls per file were a third of a copy's wall time here).
            shutil.copytree(
                source, root / name, ignore=shutil.ignore_patterns("__pycache__"), copy_function=shutil.copy
            )
        elif source.is_file():
            shutil.copy(source, root / name)
    return root


def write_environment(root: Path, name: str, text: str) -> Path:
    """environments/<name>.yaml = `text` under `root`, beside the shipped _defaults.yaml it
    may extend (written again each call, so a test may rewrite its environment); its path."""
    folder = root / "environments"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(DEFAULTS, folder / DEFAULTS.name)
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def repo_with(root: Path, env_text: str) -> Path:
    """`root` as a repository whose only environment, `bad`, is `env_text` (extending the
    shipped _defaults.yaml if it says so), with a copy of the committed rendered/."""
    write_environment(root, "bad", env_text)
    copy_repo(root, ["rendered"])
    return root


def rendered_repo(root: Path, env_text: str) -> Path:
    """repo_with(root, env_text) with `bad` rendered, which must succeed (exit 0, its stderr
    shown if not); the repository root, to read rendered/bad/ from."""
    repo_with(root, env_text)
    code, _, err = run_cli(root, "render", "bad")
    assert code == 0, err
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


def refused(root: Path, *argv: str) -> list[str]:
    """The error lines of generate.py `argv` run against `root`, which must refuse: exit 1,
    no traceback, and nothing under rendered/ written."""
    before = tree_digest(root / "rendered")
    code, out, err = run_cli(root, *argv)
    assert code == 1, (out, err)
    assert "Traceback" not in err, err
    assert tree_digest(root / "rendered") == before
    return err.strip().splitlines()
