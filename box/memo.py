"""A disk memo for what `box up` derives the same way every time from pinned inputs: the
parsed pinned CRDs and `helm template` of a pinned chart with given values.

Why: each `box up` is a new process, and parsing the few MB of CRD YAML (~5 s on the busy
2-core machine, even with libyaml) and two `helm template` runs (~5 s) were paid again by
every box the tests bring up (11 per suite run). The result is stored as JSON under the
tool cache (<cache>/box-memo/), named by the SHA-256 of every input's bytes, so a changed
chart, values file, CRD file or tool version is a different name: never a stale hit. JSON
loads ~10x faster than YAML here. Written to a temporary file then renamed, so a reader
never sees half a record and two boxes writing at once both leave a whole one.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tools.toolchain import cache_dir

FOLDER = "box-memo"


def digest(parts: Iterable[bytes | str]) -> str:
    """SHA-256 over `parts`, each length-prefixed (so no two part lists collide)."""
    hashed = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        hashed.update(len(data).to_bytes(8, "big"))
        hashed.update(data)
    return hashed.hexdigest()


def memo(kind: str, parts: Iterable[bytes | str], compute: Callable[[], Any]) -> Any:
    """`compute()`'s JSON-able result for these input `parts`, from disk when it was made before."""
    path = cache_dir() / FOLDER / f"{kind}-{digest(parts)[:32]}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):  # absent, or unreadable: make it again
        pass
    result = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(result), encoding="utf-8")
    temporary.replace(path)
    return result


def file_parts(paths: Iterable[Path]) -> list[bytes | str]:
    """Each file's path and bytes, as memo parts."""
    parts: list[bytes | str] = []
    for path in paths:
        parts += [str(path), path.read_bytes()]
    return parts
