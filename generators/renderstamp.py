"""`render --check` without rendering an environment when nothing that renders it changed.

Every render (and every check that renders) leaves a stamp: a key hashing everything that
decides an environment's output -> the digest of the files it rendered (paths and bytes).
The key covers the generator code, templates and schemas that run (every file under
generators/, templates/, schemas/), the installed distributions' names and versions, the
Python version, every file in environments/ (`extends:` may name any of them) and the
environment's name. `render --check` computes that key and the digest of rendered/<env>/ as
it is on disk: a stamp with this key and this digest means a render would find nothing
stale, so the environment is not rendered. Anything else (no stamp, another digest, an
unreadable cache) renders as before, which also lists exactly what is stale.

Not trusted where the answer matters most: with $CI set, or TRAINYARD_RENDER_STAMPS=0, no
stamp is read. Stamps live beside the other caches ($TRAINYARD_CACHE or ~/.cache/trainyard,
render-stamps/), 65 bytes each. Stdlib only: the check stays cheap to start.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path

from generators.layout import ENV_DIR, RENDERED, cache_dir

CODE = Path(__file__).resolve().parents[1]
FOLDERS = ("generators", "templates", "schemas")
_DISTRIBUTION_SUFFIXES = (".dist-info", ".egg-info", ".egg-link", ".pth")


def enabled() -> bool:
    return not os.environ.get("CI") and os.environ.get("TRAINYARD_RENDER_STAMPS", "1") != "0"


def digest(files: Iterable[tuple[str, bytes]]) -> str:
    """One hash of (relative path, content) pairs, in path order."""
    outer = hashlib.sha256()
    for path, content in sorted(files):
        outer.update(f"{path}\0{hashlib.sha256(content).hexdigest()}\n".encode())
    return outer.hexdigest()


def tree_digest(folder: Path) -> str | None:
    """digest() of every file under `folder` as on disk; None if it is not a directory."""
    if not folder.is_dir():
        return None
    return digest((p.relative_to(folder).as_posix(), p.read_bytes())
                  for p in folder.rglob("*") if p.is_file())


@cache
def code_fingerprint() -> str:
    """What renders, apart from the environment files: computed once per process."""
    files = [(p.relative_to(CODE).as_posix(), p.read_bytes())
             for folder in FOLDERS for p in (CODE / folder).rglob("*")
             if p.is_file() and "__pycache__" not in p.parts]
    installed = sorted(name for entry in sys.path if os.path.isdir(entry)
                       for name in os.listdir(entry) if name.endswith(_DISTRIBUTION_SUFFIXES))
    return digest([*files, ("python", sys.version.encode()), ("installed", "\n".join(installed).encode())])


def inputs_key(root: Path) -> str:
    """Code fingerprint + every file in environments/: read before rendering and again after,
    so that a file edited during a render never gets a stamp for output it did not make."""
    env_dir = root / ENV_DIR
    files = [(p.name, p.read_bytes()) for p in env_dir.iterdir() if p.is_file()] if env_dir.is_dir() else []
    return digest([("code", code_fingerprint().encode()), *files])


def _stamp_file(inputs: str, env_name: str) -> Path:
    key = hashlib.sha256(f"{inputs}\0{env_name}".encode()).hexdigest()
    return cache_dir() / "render-stamps" / key


def fresh(root: Path, env_names: Sequence[str]) -> set[str]:
    """The environments whose rendered/<env>/ is what their stamp says they render."""
    if not enabled():
        return set()
    try:
        inputs = inputs_key(root)
        out = set()
        for name in env_names:
            stamp = _stamp_file(inputs, name)
            if stamp.is_file() and stamp.read_text().strip() == tree_digest(root / RENDERED / name):
                out.add(name)
        return out
    except OSError:
        return set()


def store(inputs: str, stamps: dict[str, str]) -> None:
    """Record env name -> digest of its rendered files, for inputs_key() == `inputs`."""
    with contextlib.suppress(OSError):  # a cache: failing to write it only costs time
        for name, rendered_digest in stamps.items():
            target = _stamp_file(inputs, name)
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=target.parent, delete=False) as tmp:
                tmp.write(rendered_digest + "\n")
            os.replace(tmp.name, target)
