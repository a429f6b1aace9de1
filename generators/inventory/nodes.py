"""The facts sync-inventory needs from `kubectl get nodes -o json`, and nothing else."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from generators.model import quantity
from generators.model.types import Taint


class NodeListError(Exception):
    """The nodes file is not a `kubectl get nodes -o json` document we can read."""


def taint_text(taint: Taint) -> str:
    """A taint as kubectl writes it: key=value:effect, or key:effect without a value."""
    return f"{taint.key}{'=' + taint.value if taint.value else ''}:{taint.effect}"


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str]
    ready: bool  # the Ready condition is "True"
    unschedulable: bool  # cordoned (spec.unschedulable)
    taints: tuple[Taint, ...]
    allocatable: Mapping[str, str]  # raw quantities as the kubelet reports them
    capacity: Mapping[str, str]

    def amount(self, resource: str) -> Fraction:
        """Allocatable `resource` (0 when absent or unreadable): what pods can actually get."""
        return _quantity(self.allocatable.get(resource))

    def has(self, resource: str) -> bool:
        """The device plugin advertises some `resource` here (in capacity or allocatable)."""
        return _quantity(self.capacity.get(resource)) > 0 or self.amount(resource) > 0


def _quantity(raw: str | None) -> Fraction:
    if raw is None:
        return Fraction(0)
    try:
        return quantity.parse(raw).value
    except quantity.QuantityError:
        return Fraction(0)


def _strings(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise NodeListError(f"{where} must be a mapping")
    return {str(k): str(v) for k, v in value.items()}


def _node(item: Any, index: int) -> Node:
    if not isinstance(item, dict) or not isinstance(item.get("metadata"), dict):
        raise NodeListError(f"items[{index}] is not a Node object")
    name = item["metadata"].get("name")
    if not isinstance(name, str) or not name:
        raise NodeListError(f"items[{index}] has no metadata.name")
    spec = item.get("spec") or {}
    status = item.get("status") or {}
    conditions = status.get("conditions") or []
    ready = any(
        isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True" for c in conditions
    )
    taints = tuple(
        Taint(
            str(t.get("key", "")),
            None if t.get("value") in (None, "") else str(t["value"]),
            str(t.get("effect", "")),
        )
        for t in spec.get("taints") or []
        if isinstance(t, dict)
    )
    return Node(
        name,
        _strings(item["metadata"].get("labels"), f"node {name}: metadata.labels"),
        ready,
        spec.get("unschedulable") is True,
        taints,
        _strings(status.get("allocatable"), f"node {name}: status.allocatable"),
        _strings(status.get("capacity"), f"node {name}: status.capacity"),
    )


def _yaml(text: str, json_error: str) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        raise NodeListError(
            f"{json_error}; not YAML either: save `kubectl get nodes -o json` (or -o yaml) to the file"
        ) from None


def read(path: Path) -> list[Node]:
    """Nodes of a NodeList (or a kubectl `List` of Nodes) in a JSON file, or the same as
    `kubectl get nodes -o yaml` prints it (people reach for -o yaml; refusing it helped no one)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise NodeListError("not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        data = _yaml(text, f"not JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}")
    return parse(data)


def parse(data: Any) -> list[Node]:
    """Nodes of a decoded NodeList: a file's (read) or the API server's (doctor)."""
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise NodeListError(
            "expected the output of `kubectl get nodes -o json` (or -o yaml): a List with items"
        )
    kinds = {item.get("kind") for item in data["items"] if isinstance(item, dict)} - {None, "Node"}
    if kinds:
        raise NodeListError(f"items must be Nodes, found {', '.join(sorted(map(str, kinds)))}")
    return [_node(item, i) for i, item in enumerate(data["items"])]
