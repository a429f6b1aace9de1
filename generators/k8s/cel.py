"""CEL fragments the admission policies share (ValidatingAdmissionPolicy and
MutatingAdmissionPolicy expressions over a node or a pod)."""

from __future__ import annotations

import json
from typing import Any


def literal(value: Any) -> str:
    """A CEL literal for a string, list or map of strings (JSON's syntax is valid CEL here)."""
    return json.dumps(value)


def taints(var: str) -> str:
    """`var`'s spec.taints, [] when there are none."""
    return f"(has({var}.spec) && has({var}.spec.taints) ? {var}.spec.taints : [])"


def field(var: str, parent: str, name: str, empty: str) -> str:
    """`var`.`parent`.`name`, `empty` when absent."""
    return f"(has({var}.{parent}.{name}) ? {var}.{parent}.{name} : {empty})"


def same_map_except(name: str, exempt: str | list[str]) -> str:
    """metadata.<name> equal in object and oldObject, except the key `exempt` (one key) or
    the keys in `exempt` (a list)."""
    new = field("object", "metadata", name, "{}")
    old = field("oldObject", "metadata", name, "{}")
    skip = f"k == {literal(exempt)}" if isinstance(exempt, str) else f"k in {literal(exempt)}"
    return (
        f"{old}.all(k, {skip} || (k in {new} && {new}[k] == {old}[k])) && {new}.all(k, {skip} || k in {old})"
    )
