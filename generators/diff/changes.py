"""Per-object changes between the base and the working tree: added, removed, changed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from generators.diff.fields import FieldChange, changed_fields
from generators.diff.masking import is_masked
from generators.diff.objects import ObjectKey, ObjectRecord

Action = Literal["added", "removed", "changed"]


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
