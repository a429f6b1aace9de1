"""validate and diff take a fresh render's objects instead of parsing committed files
(layer `reuse`).

Both commands render every environment anyway; a committed file whose text is exactly what the
render made holds exactly the object the render made (the emitter's round trip is tested), so
parsing it again (~170 M instructions, ~30 ms, per environment) is skipped. Only plain data
qualifies (is_plain), as a parse would give: a tuple, say, would hide its items from
the policies' walk. In memory only, nothing on disk: on in CI.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TypeVar

from generators import speedups
from generators.layout import RENDERED

Content = TypeVar("Content", str, bytes)


class RenderedFile(Protocol):
    """What this layer reads of generators/pipeline/render.RenderedFile (the pipeline sits
    above the speed-ups: tests/test_import_graph.py LAYERS)."""

    @property
    def path(self) -> str: ...  # relative to rendered/<env>/

    @property
    def text(self) -> str: ...

    @property
    def obj(self) -> dict[str, Any]: ...


def rendered_objects(name: str, files: Iterable[RenderedFile]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Repository path -> (text, object) of environment `name`'s fresh rendering; empty
    when the layer is off, so that every committed file is parsed."""
    if not speedups.on("reuse"):
        return {}
    return {f"{RENDERED}/{name}/{f.path}": (f.text, f.obj) for f in files}


def held(known: Mapping[str, tuple[Content, Any]] | None, path: str, content: Content) -> Any | None:
    """The object `known` holds for `path` if the file's content is exactly its text."""
    entry = (known or {}).get(path)
    if entry is not None and entry[0] == content and is_plain(entry[1]):
        return entry[1]
    return None


def is_plain(value: Any) -> bool:
    """Only what a YAML parse builds: dicts with str keys, lists, str, int, float, bool, None
    (a tuple, say, would hide its items from walk.nodes, which follows lists)."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and is_plain(v) for k, v in value.items())
    if kind is list:
        return all(is_plain(v) for v in value)
    return value is None or kind in (str, int, float, bool)
