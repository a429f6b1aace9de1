"""Field-level difference of two objects: which leaves changed, by path.

Lists are compared by index, as Kubernetes addresses them in a JSON patch and as a reader
finds them in the YAML (spec.resourceGroups[0].flavors[1].resources[0].nominalQuota).
A list that grows or shrinks reports the added or removed items as whole values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()  # absent on one side

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class FieldChange:
    path: Path
    before: Any  # MISSING when the field was added
    after: Any  # MISSING when the field was removed


def changed_fields(before: Any, after: Any, path: Path = ()) -> list[FieldChange]:
    """Every differing leaf (or added/removed subtree) between `before` and `after`."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[FieldChange] = []
        for key in [*before, *(k for k in after if k not in before)]:
            out += changed_fields(before.get(key, MISSING), after.get(key, MISSING), (*path, key))
        return out
    if isinstance(before, list) and isinstance(after, list):
        out = []
        for i in range(max(len(before), len(after))):
            out += changed_fields(before[i] if i < len(before) else MISSING,
                                  after[i] if i < len(after) else MISSING, (*path, i))
        return out
    if before is MISSING and after is MISSING:
        return []
    if type(before) is type(after) and before == after:
        return []
    return [FieldChange(path, before, after)]


def format_path(path: Path) -> str:
    """`("metadata", "labels", "trainyard.dev/team")` -> `metadata.labels["trainyard.dev/team"]`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += '["' + part.replace("\\", "\\\\").replace('"', '\\"') + '"]'
    return out
