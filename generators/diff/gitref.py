"""Files as committed at a git ref: the base side of a diff.

Two processes per read, whatever the number of files: `git ls-tree` lists the blobs and
one `git cat-file --batch` streams them all (a process per file costs ~2 ms each, which
adds up to seconds on a few thousand rendered objects).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

DEFAULT_BRANCHES = ("main", "origin/main")  # CI checkouts often have only the remote branch


class GitError(Exception):
    """git failed, or the ref does not exist: a usage error, shown as one line."""


@dataclass(frozen=True)
class Base:
    """The ref to compare against, as the user named it and as the commit it resolves to."""

    label: str  # e.g. "merge-base(HEAD, main)" or the --base argument
    commit: str  # full SHA

    @property
    def short(self) -> str:
        return self.commit[:12]


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=root, input=stdin, capture_output=True, check=False)
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise GitError(f"git {args[0]} failed: {message[-1] if message else 'exit ' + str(done.returncode)}")
    return done.stdout


def _commit_of(root: Path, ref: str) -> str | None:
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except GitError:
        return None


def resolve(root: Path, ref: str | None) -> Base:
    """--base REF, or by default the merge base of HEAD with main (HEAD itself without main)."""
    if ref is not None:
        commit = _commit_of(root, ref)
        if commit is None:
            raise GitError(f"unknown git ref {ref!r}")
        return Base(ref, commit)
    head = _commit_of(root, "HEAD")
    if head is None:
        raise GitError("no commit at HEAD: commit the rendered tree once, or pass --base")
    for branch in DEFAULT_BRANCHES:
        if _commit_of(root, branch) is not None:
            merge_base = _git(root, "merge-base", "HEAD", branch).decode().strip()
            return Base(f"merge-base(HEAD, {branch})", merge_base)
    return Base("HEAD", head)


def read_tree(root: Path, commit: str, folders: tuple[str, ...]) -> dict[str, bytes]:
    """path (relative to `root`) -> content of every blob under `folders` at `commit`."""
    listing = _git(root, "ls-tree", "-r", "-z", commit, "--", *(f"{f}/" for f in folders))
    blobs: list[tuple[str, str]] = []  # (sha, path)
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, path = entry.split(b"\t", 1)
        _mode, kind, sha = meta.split()
        if kind == b"blob":
            blobs.append((sha.decode(), path.decode()))
    if not blobs:
        return {}
    stream = _git(root, "cat-file", "--batch", stdin="".join(f"{sha}\n" for sha, _ in blobs).encode())
    return dict(zip((path for _, path in blobs), _split_batch(stream, len(blobs)), strict=True))


def _split_batch(stream: bytes, count: int) -> list[bytes]:
    """Contents from `git cat-file --batch` output: `<sha> <type> <size>\\n<bytes>\\n` each."""
    contents = []
    at = 0
    for _ in range(count):
        header_end = stream.index(b"\n", at)
        header = stream[at:header_end].split()
        if len(header) != 3:
            raise GitError(f"git cat-file: unexpected header {stream[at:header_end]!r}")
        size = int(header[2])
        start = header_end + 1
        contents.append(stream[start : start + size])
        at = start + size + 1
    return contents
