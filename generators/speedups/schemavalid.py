"""Successes of the schema check, remembered on disk (layer `schema`).

Importing jsonschema and checking costs `validate` of the shipped environments ~220 M
instructions (6 % more; diff 11 %; docs/performance.md, "Speed-ups"); a document that passed
with the same code, schemas and libraries passes again. A marker file per success, keyed
with keys.code_fingerprint() and the pickled document (exact: types included, unlike JSON).
Failures are never recorded: their messages are always computed afresh. Off with $CI set.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from generators import speedups
from generators.layout import cache_dir
from generators.speedups.keys import code_fingerprint, digest


def marker(value: Any) -> Path | None:
    """Where a success for exactly this document is recorded; None: no cache for it."""
    if not speedups.on("schema"):
        return None
    try:
        data = pickle.dumps(value, protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    return cache_dir() / "schema-valid" / digest([("code", code_fingerprint().encode()), ("document", data)])


def remember(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    except OSError:
        pass  # a cache: the next run checks again
