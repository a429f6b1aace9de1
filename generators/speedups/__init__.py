"""Speed-ups beside the pipeline, behind one switch: TRAINYARD_SPEEDUPS.

Every layer only saves time: with all of them off, every command gives the same output and
the same exit code (tests prove it). One module per layer (docs/performance.md, "Speed-ups",
has the table of what each saves, its key and when it is off):

- `templates`   templatecache: compiled templates on disk (jinja/)
- `shapes`      templateshapes: each template's output parsed once per shape, in memory
- `stamps`      renderstamp: `render --check` skips environments a stamp vouches for
- `schema`      schemavalid: a document that passed the schema check is not checked again
- `reuse`       parsereuse: validate and diff take a fresh render's objects for committed
                files with exactly its text instead of parsing them

TRAINYARD_SPEEDUPS unset or `1`: every layer on; `0`: every layer off; otherwise a
comma-separated list of the layers to keep on (to measure one layer; other words name no
layer, so a typo turns layers off, which only costs time). Where $CI is set, the layers that
would let an earlier run on this machine vouch for today's answer (stamps, schema markers)
are off whatever the switch says: CI always does the work.
Stdlib only: `render --check` asks the switch before importing anything else.
"""

from __future__ import annotations

import os

SWITCH = "TRAINYARD_SPEEDUPS"
LAYERS = ("templates", "shapes", "stamps", "schema", "reuse")
NOT_IN_CI = frozenset({"stamps", "schema"})


def on(layer: str) -> bool:
    """Whether `layer` (one of LAYERS) is in use in this process right now."""
    if layer not in LAYERS:
        raise ValueError(f"unknown speed-up layer {layer!r}; one of {', '.join(LAYERS)}")
    if layer in NOT_IN_CI and os.environ.get("CI"):
        return False
    value = os.environ.get(SWITCH, "1").strip()
    return value == "1" or layer in {word.strip() for word in value.split(",")}
