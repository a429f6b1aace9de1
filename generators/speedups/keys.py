"""Keys of the on-disk layers: one digest function, and the fingerprint of what renders.

Stamps, schema markers and shapes on disk are valid only for the code that made them: their
keys include code_fingerprint(), which hashes every file under generators/, templates/ and
schemas/, the installed distributions' names and versions (Jinja, PyYAML, jsonschema ...)
and the Python version. Stdlib only: `render --check` computes it before importing anything.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path

CODE = Path(__file__).resolve().parents[2]
FOLDERS = ("generators", "templates", "schemas")
_DISTRIBUTION_SUFFIXES = (".dist-info", ".egg-info", ".egg-link", ".pth")


def digest(files: Iterable[tuple[str, bytes]]) -> str:
    """One hash of (relative path, content) pairs, in path order."""
    outer = hashlib.sha256()
    for path, content in sorted(files):
        outer.update(f"{path}\0{hashlib.sha256(content).hexdigest()}\n".encode())
    return outer.hexdigest()


@cache
def code_fingerprint() -> str:
    """What renders, apart from the environment files: computed once per process."""
    files = [
        (p.relative_to(CODE).as_posix(), p.read_bytes())
        for folder in FOLDERS
        for p in (CODE / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]
    installed = sorted(
        name
        for entry in sys.path
        if os.path.isdir(entry)
        for name in os.listdir(entry)
        if name.endswith(_DISTRIBUTION_SUFFIXES)
    )
    return digest([*files, ("python", sys.version.encode()), ("installed", "\n".join(installed).encode())])
