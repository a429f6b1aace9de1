"""Field-level difference of two objects: which leaves changed, by path.

Lists whose items all carry a natural key are matched by that key, as Kubernetes' strategic
merge patch does (patchMergeKey: `name` for containers, flavors, resources; `key` and
`effect` for taints; `alert`/`record` for rules): inserting a pool before another is one
item added, not every later flavor "renamed" with its quota moved. Paths keep the index
notation of the YAML a reader opens (the item's index after the change; before, for a
removed item). Other lists are compared by index, as a JSON patch addresses them. Added and
removed items are reported whole; a keyed list whose order alone changed (Kueue tries
flavors in order) is one change of the list, listing the keys. Lists of scalars are
aligned like lines of text (an inserted namespace is one item added).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]
# Natural keys, tried in order; a list is keyed by the first that every item on both sides has
# and that is unique on each side (else it is compared by index).
NATURAL_KEYS: tuple[tuple[str, ...], ...] = (
    ("name",),
    ("key", "effect"),
    ("alert",),
    ("record",),
    ("uid",),
    ("containerPort", "protocol"),
    ("containerPort",),
    ("type",),
)
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
        fields = _natural_key(before, after)
        if fields is not None:
            return _keyed(before, after, fields, path)
        if all(isinstance(v, (str, int, float, bool)) or v is None for v in [*before, *after]):
            return _aligned(before, after, path)
        out = []
        for i in range(max(len(before), len(after))):
            out += changed_fields(
                before[i] if i < len(before) else MISSING, after[i] if i < len(after) else MISSING, (*path, i)
            )
        return out
    if before is MISSING and after is MISSING:
        return []
    if type(before) is type(after) and before == after:
        return []
    return [FieldChange(path, before, after)]


def _aligned(before: list[Any], after: list[Any], path: Path) -> list[FieldChange]:
    """Lists of scalars (namespaces, args) aligned as a text diff aligns lines: one name
    inserted is one item added, not every later item changed."""
    out: list[FieldChange] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        paired = min(i2 - i1, j2 - j1) if op == "replace" else 0
        out += [FieldChange((*path, j1 + k), before[i1 + k], after[j1 + k]) for k in range(paired)]
        out += [FieldChange((*path, i), before[i], MISSING) for i in range(i1 + paired, i2)]
        out += [FieldChange((*path, j), MISSING, after[j]) for j in range(j1 + paired, j2)]
    return out


def _natural_key(before: list[Any], after: list[Any]) -> tuple[str, ...] | None:
    items = [*before, *after]
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    for fields in NATURAL_KEYS:
        present = all(all(f in item and isinstance(item[f], (str, int)) for f in fields) for item in items)
        if present and all(len({_key(i, fields) for i in side}) == len(side) for side in (before, after)):
            return fields
    return None


def _key(item: dict[str, Any], fields: tuple[str, ...]) -> str:
    return ",".join(f"{f}={item[f]}" for f in fields)


def _keyed(before: list[Any], after: list[Any], fields: tuple[str, ...], path: Path) -> list[FieldChange]:
    old = {_key(item, fields): (i, item) for i, item in enumerate(before)}
    new = {_key(item, fields): (i, item) for i, item in enumerate(after)}
    out: list[FieldChange] = []
    kept_old = [k for k in old if k in new]
    kept_new = [k for k in new if k in old]
    if kept_old != kept_new:
        out.append(FieldChange(path, kept_old, kept_new))
    for key, (i, item) in old.items():  # removed items first, at their old index
        if key not in new:
            out.append(FieldChange((*path, i), item, MISSING))
    for key, (i, item) in new.items():
        out += changed_fields(old[key][1] if key in old else MISSING, item, (*path, i))
    return out


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
