"""What a policy sees: the rendered objects of one environment and its model; what it says.

A policy reads `Context` and yields `Finding`s made with `RenderedObject.finding(message)`;
the registry (policies/__init__.py) stamps each with the policy's ID and SEVERITY, so a
policy never repeats its own id.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml

from generators.model.environment import Environment
from generators.speedups.parsereuse import held as known_object
from policies import walk

Severity = Literal["error", "warning"]
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
COMPONENT_LABEL = "trainyard.dev/component"


@dataclass(frozen=True, order=True)
class Finding:
    """One problem with one object: `<file>: <kind>/<name>: <policy>: <message>`."""

    file: str  # relative to the repository root: rendered/<env>/<component>/...
    kind: str
    name: str
    policy: str
    message: str
    severity: Severity = "error"

    def line(self) -> str:
        where = f"{self.kind}/{self.name}: " if self.kind or self.name else ""
        return f"{self.file}: {where}{self.policy}: {self.message}"


def _mapping(value: Any) -> Mapping[str, Any]:
    """`value` if it is a mapping, else empty: a policy must not crash on a malformed object
    (kubeconform reports the shape)."""
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True, eq=False)  # identity: objects are dict keys in policies
class RenderedObject:
    """One YAML document of a file under rendered/<env>/."""

    path: str  # relative to the repository root
    obj: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind") or "")

    @property
    def metadata(self) -> Mapping[str, Any]:
        return _mapping(self.obj.get("metadata"))

    @property
    def name(self) -> str:
        return str(self.metadata.get("name") or "")

    @property
    def namespace(self) -> str | None:
        namespace = self.metadata.get("namespace")
        return str(namespace) if namespace else None

    @property
    def labels(self) -> Mapping[str, Any]:
        return _mapping(self.metadata.get("labels"))

    @property
    def annotations(self) -> Mapping[str, Any]:
        return _mapping(self.metadata.get("annotations"))

    @property
    def component(self) -> str:
        return str(self.labels.get(COMPONENT_LABEL, ""))

    @property
    def spec(self) -> Mapping[str, Any]:
        return _mapping(self.obj.get("spec"))

    @cached_property
    def tree(self) -> list[tuple[walk.Path, Mapping[str, Any]]]:
        """Every mapping in the object with its path (walk.nodes), computed once."""
        return list(walk.nodes(self.obj))

    @cached_property
    def embedded(self) -> list[tuple[str, Mapping[str, Any]]]:
        """Configuration files inside a ConfigMap, parsed once (walk.embedded_documents)."""
        return list(walk.embedded_documents(self.obj))

    def finding(self, message: str) -> Finding:
        """A finding on this object; the registry fills in policy id and severity."""
        return Finding(self.path, self.kind, self.name, "", message)


@dataclass(frozen=True)
class Context:
    """The rendered objects of one environment (as committed) and its model."""

    env: Environment
    objects: tuple[RenderedObject, ...]
    _by_kind: dict[str, list[RenderedObject]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for item in self.objects:
            self._by_kind.setdefault(item.kind, []).append(item)

    def of_kind(self, *kinds: str) -> list[RenderedObject]:
        """Objects of the given kinds, in file order."""
        if len(kinds) == 1:
            return list(self._by_kind.get(kinds[0], []))
        return [item for item in self.objects if item.kind in kinds]

    def names(self, kind: str) -> dict[str, RenderedObject]:
        """Objects of a kind keyed by name (cluster-scoped kinds, or one namespace)."""
        return {item.name: item for item in self.of_kind(kind)}


@dataclass(frozen=True)
class ParsedTree:
    objects: list[RenderedObject]
    counts: dict[str, int]  # str(path) -> objects kubeconform will see (List items split)
    broken: list[Path]  # not valid YAML: kubeconform reports them; policies do not see them


def read_objects(
    root: Path, files: Iterable[Path], known: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None
) -> ParsedTree:
    """Parse manifest files into objects (paths shown relative to root).

    `known` maps a shown path to (text, object) when the caller holds the object that text
    parses to (speedups.parsereuse): a file with exactly that text is not parsed again."""
    tree = ParsedTree([], {}, [])
    for path in files:
        shown = path.relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
            held = known_object(known, shown, text)
            if held is not None:
                documents: list[Any] = [held]
            else:
                documents = list(yaml.load_all(text, Loader=walk.LOADER))
        except (yaml.YAMLError, UnicodeDecodeError):
            tree.broken.append(path)
            continue
        count = 0
        for document in documents:
            if document is None:
                continue
            count += _count(document)
            tree.objects.extend(RenderedObject(shown, item) for item in _items(document))
        tree.counts[str(path)] = count
    return tree


def _is_list(document: Any) -> bool:
    return isinstance(document, Mapping) and str(document.get("kind", "")).lower() == "list"


def _count(document: Any) -> int:
    """Objects kubeconform counts in a document: a List's items, else the document."""
    if _is_list(document):
        items = document.get("items") or []
        return len(items) if isinstance(items, list) else 0
    return 1


def _items(document: Any) -> Iterator[Mapping[str, Any]]:
    """The mapping objects of a document: itself, or a List's items."""
    if not isinstance(document, Mapping):
        return
    if not _is_list(document):
        yield document
        return
    items = document.get("items")
    for item in items if isinstance(items, list) else []:
        if isinstance(item, Mapping):
            yield item
