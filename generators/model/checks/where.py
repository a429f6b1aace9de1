"""Where a setting the checks read sits in the file: the spec path fromspec maps its field from.

A check reads a model field (`pool.reserve_nodes`) and reports at the key that field maps
(`pools[2].reserveNodes`), so the checks spell each setting once, as the model does.
"""

from __future__ import annotations

from generators.model.environment import Environment
from generators.model.fromspec import spec_path

Path_ = tuple[str | int, ...]


def item(section: str, i: int, cls: type | None = None, field: str | None = None) -> Path_:
    """Item `i` of Environment's `section` and, given, its `field` of class `cls`:
    `item("pools", 2, Pool, "reserve_nodes")` is pools[2].reserveNodes."""
    head: Path_ = (*spec_path(Environment, section), i)
    if cls is None or field is None:
        return head
    return (*head, *spec_path(cls, field))


def section(*steps: tuple[type, str]) -> tuple[str, ...]:
    """The keys down a chain of fields from Environment: `section((Environment, "kueue"),
    (KueueOptions, "preemption"))` is kueue.preemption."""
    return tuple(key for cls, field in steps for key in spec_path(cls, field))
