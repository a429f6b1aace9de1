"""Per-object changes between the base and the working tree (added, removed, changed), and
which of their values are secret: kept out of every output (a PR comment is public) while
still saying they changed.

Masked: every value under a Secret's data/stringData, and values under a ConfigMap's
data/binaryData whose key looks like a credential (token, password, secret, key). The
placeholder differs between the sides exactly when the value differs, so a unified diff
still shows a changed line, and nothing about the value itself (no hash: short secrets
would be guessable from it).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Literal

from generators.diff.fields import MISSING, FieldChange, Path, changed_fields
from generators.diff.objects import ObjectKey, ObjectRecord

Action = Literal["added", "removed", "changed"]

MASKED = "<masked>"
MASKED_CHANGED = "<masked: changed>"
_CREDENTIAL_KEY = re.compile(r"token|password|secret|key", re.IGNORECASE)
_SECRET_FIELDS = ("data", "stringData")
_CONFIGMAP_FIELDS = ("data", "binaryData")


@dataclass(frozen=True)
class ObjectChange:
    action: Action
    key: ObjectKey
    path: str  # where the object is rendered (the working tree's path unless removed)
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    fields: tuple[FieldChange, ...]  # empty for added and removed objects

    @property
    def api_version(self) -> str:
        return str((self.after or self.before or {}).get("apiVersion", ""))

    def masked(self, field: FieldChange) -> bool:
        return is_masked(self.key.kind, field.path)


def compare(base: dict[ObjectKey, ObjectRecord], head: dict[ObjectKey, ObjectRecord]) -> list[ObjectChange]:
    """Changes sorted by rendered path, so output follows the rendered/ tree."""
    out: list[ObjectChange] = []
    for key in base.keys() | head.keys():
        old, new = base.get(key), head.get(key)
        if old is None and new is not None:
            out.append(ObjectChange("added", key, new.path, None, new.obj, ()))
        elif new is None and old is not None:
            out.append(ObjectChange("removed", key, old.path, old.obj, None, ()))
        elif old is not None and new is not None and old.obj is not new.obj:  # same: reused
            fields = changed_fields(old.obj, new.obj)
            if fields:
                out.append(ObjectChange("changed", key, new.path, old.obj, new.obj, tuple(fields)))
    out.sort(key=lambda c: (c.key.env, c.path, c.key))
    return out


def is_masked(kind: str, path: Path) -> bool:
    """Whether the field at `path` of an object of `kind` holds a secret value."""
    if len(path) < 2 or not isinstance(path[1], str):
        return False
    if kind == "Secret":
        return path[0] in _SECRET_FIELDS
    if kind == "ConfigMap":
        return path[0] in _CONFIGMAP_FIELDS and _CREDENTIAL_KEY.search(path[1]) is not None
    return False


def masked_pair(
    kind: str, before: dict[str, Any] | None, after: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Copies of both sides with secret values replaced; the inputs are not touched."""
    if kind not in ("Secret", "ConfigMap"):
        return before, after
    fields = _SECRET_FIELDS if kind == "Secret" else _CONFIGMAP_FIELDS
    masked_before, masked_after = copy.deepcopy(before), copy.deepcopy(after)
    for field in fields:
        old = (before or {}).get(field)
        new = (after or {}).get(field)
        for key in sorted(set(old or {}) | set(new or {})):
            if not is_masked(kind, (field, key)):
                continue
            old_value = (old or {}).get(key, MISSING)
            new_value = (new or {}).get(key, MISSING)
            if masked_before is not None and old_value is not MISSING:
                masked_before[field][key] = MASKED
            if masked_after is not None and new_value is not MISSING:
                masked_after[field][key] = MASKED if old_value == new_value else MASKED_CHANGED
    return masked_before, masked_after
