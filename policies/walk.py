"""Generic traversals over Kubernetes objects, shared by several policies.

Traversals are structural (any mapping with `containers` is a pod spec, any `tolerations`
list holds tolerations) rather than per kind, so a kind added later (JobSet, PyTorchJob,
an operator's CR) is covered without touching the policies.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import yaml

Path = tuple[str | int, ...]
Tree = Iterable[tuple[Path, Mapping[str, Any]]]  # what nodes() yields; RenderedObject.tree caches it
LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's C loader where PyYAML has it


def nodes(value: Any, path: Path = ()) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """Every mapping inside value (value itself included), depth first, with its path.

    An explicit stack rather than nested generators, and scalars never pushed: policies walk
    every object of every environment (docs/performance.md)."""
    stack: list[tuple[Path, Any]] = [(path, value)]
    while stack:
        path, value = stack.pop()
        if type(value) is dict or isinstance(value, Mapping):  # the ABC check is slow for dicts
            yield path, value
            children = [((*path, str(key)), child) for key, child in value.items() if _branch(child)]
        elif isinstance(value, list):
            children = [((*path, index), child) for index, child in enumerate(value) if _branch(child)]
        else:
            continue
        stack.extend(reversed(children))


_SCALARS = (str, int, float, bool, type(None))


def _branch(value: Any) -> bool:
    """A mapping or a list (what nodes() descends into); scalars are ruled out cheaply."""
    return type(value) not in _SCALARS and isinstance(value, (dict, list, Mapping))


def show(path: Path) -> str:
    """spec.template.spec.containers[0].image"""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def pod_specs(tree: Tree) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """Every pod spec in an object: a mapping with a `containers` list."""
    for path, node in tree:
        if isinstance(node.get("containers"), list):
            yield path, node


def containers(pod: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(`containers[i]` or `initContainers[i]`, container) of a pod spec."""
    for key in ("initContainers", "containers"):
        for index, container in enumerate(pod.get(key) or []):
            if isinstance(container, Mapping):
                yield f"{key}[{index}]", container


def items_under(tree: Tree, key: str) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """Each mapping in a list stored under `key` anywhere in an object (every toleration)."""
    for path, node in tree:
        value = node.get(key)
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, Mapping):
                    yield (*path, key, index), item


def label_maps(tree: Tree) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """metadata.labels of the object and of every template inside it."""
    for path, node in tree:
        if path and path[-1] == "metadata" and isinstance(node.get("labels"), Mapping):
            yield (*path, "labels"), node["labels"]


def embedded_documents(obj: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(data key, parsed value) of a ConfigMap's YAML/JSON data entries that parse to
    a mapping: configuration files shipped inside ConfigMaps (TaintPolicy, Kueue config,
    dashboards, rule files)."""
    if obj.get("kind") != "ConfigMap":
        return
    data = obj.get("data")
    if not isinstance(data, Mapping):
        return
    for key, text in sorted(data.items()):
        if not isinstance(text, str) or not str(key).endswith((".yaml", ".yml", ".json")):
            continue
        try:
            if str(key).endswith(".json"):
                documents = [json.loads(text)]
            else:
                documents = [d for d in yaml.load_all(text, Loader=LOADER) if d is not None]
        except (yaml.YAMLError, ValueError):
            continue
        for document in documents:
            if isinstance(document, Mapping):
                yield str(key), document
