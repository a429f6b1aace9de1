"""Load YAML with the line and column of every node, and merge `extends:` bases.

libyaml's C composer gives us nodes with marks at C speed; we build plain Python values
ourselves so that we can (a) reject duplicate keys, which PyYAML silently overwrites,
(b) bound the expansion of aliases (an alias bomb is a few lines that expand to billions of
nodes), and (c) keep a position tree for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from generators.errors import Location, Problem, SpecError, format_path

MAX_FILE_BYTES = 512 * 1024  # a real-sized production spec is ~15 KiB
MAX_NODES = 200_000  # after alias expansion
MAX_DEPTH = 64

Value = Any  # a YAML-decoded value: dict[str, Value] | list[Value] | str | int | float | bool | None


@dataclass
class Pos:
    """Where a value (and, for mapping entries, its key) sits in which file."""

    at: Location
    key_at: Location | None = None
    children: dict[str | int, Pos] = field(default_factory=dict)


@dataclass
class Document:
    value: Value
    pos: Pos

    def locate(self, path: tuple[str | int, ...], *, key: bool = False) -> Location:
        """The position of `path`, or of its nearest ancestor that exists."""
        node = self.pos
        for part in path:
            child = node.children.get(part)
            if child is None:
                return node.at
            node = child
        if key and node.key_at is not None:
            return node.key_at
        return node.at


def _loc(display: str, mark: yaml.Mark) -> Location:
    return Location(display, mark.line + 1, mark.column + 1)


_SCALARS = yaml.constructor.SafeConstructor()
_PLAIN_TAGS = {
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
}


class _Builder:
    def __init__(self, display: str) -> None:
        self.display = display
        self.count = 0

    def fail(self, mark: yaml.Mark, message: str, path: tuple[str | int, ...], hint: str = "") -> SpecError:
        return SpecError([Problem(_loc(self.display, mark), message, format_path(path), hint)])

    def build(self, node: yaml.Node, path: tuple[str | int, ...]) -> tuple[Value, Pos]:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(
                node.start_mark,
                f"document expands to more than {MAX_NODES} nodes",
                path,
                "aliases that multiply (an alias bomb) are refused",
            )
        if len(path) > MAX_DEPTH:
            raise self.fail(node.start_mark, f"nesting deeper than {MAX_DEPTH} levels", path)
        pos = Pos(_loc(self.display, node.start_mark))
        if isinstance(node, yaml.MappingNode):
            mapping: dict[str, Value] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    raise self.fail(
                        key_node.start_mark,
                        "keys must be plain strings",
                        path,
                        "merge keys (<<) and complex keys are not supported; use extends:",
                    )
                key = str(key_node.value)
                if key in mapping:
                    first = pos.children[key].key_at
                    raise self.fail(
                        key_node.start_mark,
                        f"duplicate key {key!r}",
                        (*path, key),
                        f"first defined at line {first.line if first else '?'}",
                    )
                value, child = self.build(value_node, (*path, key))
                child.key_at = _loc(self.display, key_node.start_mark)
                mapping[key] = value
                pos.children[key] = child
            return mapping, pos
        if isinstance(node, yaml.SequenceNode):
            items: list[Value] = []
            for i, item_node in enumerate(node.value):
                value, child = self.build(item_node, (*path, i))
                items.append(value)
                pos.children[i] = child
            return items, pos
        assert isinstance(node, yaml.ScalarNode)
        if node.tag in _PLAIN_TAGS:
            return _SCALARS.construct_object(node), pos
        # Strings, and YAML 1.1 timestamps/binaries kept as the text the person wrote.
        return str(node.value), pos


def load_file(path: Path, display: str) -> Document:
    """Parse one YAML file into a Document. `display` is the path shown in errors."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SpecError([Problem(Location(display), f"cannot read file: {exc.strerror}")]) from None
    if len(raw) > MAX_FILE_BYTES:
        raise SpecError(
            [
                Problem(
                    Location(display),
                    f"file is {len(raw)} bytes, over the {MAX_FILE_BYTES}-byte limit for an environment file",
                )
            ]
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError([_not_utf8(display, raw, exc)]) from None
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.CSafeLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = _loc(display, mark) if mark else Location(display)
        what = (exc.problem or exc.context or "invalid YAML").strip()
        at = text[mark.index : mark.index + 1] if mark else ""
        raise SpecError([Problem(where, f"YAML syntax: {what}", hint=_syntax_hint(what, at))]) from None
    except yaml.YAMLError as exc:
        raise SpecError([Problem(Location(display), f"YAML error: {exc}")]) from None
    if not nodes:
        raise SpecError(
            [
                Problem(
                    Location(display),
                    "the file is empty (nothing but comments or blank lines)",
                    hint="an environment needs at least name, cluster, pools, "
                    "teams and priorities; environments/dev.yaml is a small example",
                )
            ]
        )
    if len(nodes) != 1:
        raise SpecError(
            [
                Problem(
                    _loc(display, nodes[1].start_mark),
                    f"expected one YAML document, found {len(nodes)}",
                    hint="remove the extra '---' separators",
                )
            ]
        )
    value, pos = _Builder(display).build(nodes[0], ())
    if not isinstance(value, dict):
        raise SpecError([Problem(pos.at, "the environment file must be a mapping at the top level")])
    return Document(value, pos)


# libyaml's words for a line indented wrongly; they name a token, not the cause.
_INDENTATION = (
    "did not find expected '-' indicator",
    "did not find expected key",
    "mapping values are not allowed",
    "block sequence entries are not allowed",
    "could not find expected ':'",
    "did not find expected <document start>",
)


def _syntax_hint(problem: str, at: str) -> str:
    if at == "\t" or "\\t" in problem:
        return "a tab here: YAML does not allow tabs for indentation; use spaces"
    if problem.startswith(_INDENTATION):
        return (
            "probably indentation: this line or the one above is indented differently from its "
            "siblings (list items start with '- ' at one column, keys of a mapping line up "
            "under each other; spaces only)"
        )
    if "expected ',' or '}'" in problem or "expected ',' or ']'" in problem:
        return "a {...} or [...] on this line or above is not closed, or lacks a ',' between items"
    return ""


def _not_utf8(display: str, raw: bytes, exc: UnicodeDecodeError) -> Problem:
    """The line and column of the first byte that is not UTF-8 (editors show those)."""
    line_start = raw.rfind(b"\n", 0, exc.start) + 1
    line = raw.count(b"\n", 0, exc.start) + 1
    col = len(raw[line_start : exc.start].decode("utf-8", "replace")) + 1
    return Problem(
        Location(display, line, col),
        f"not UTF-8: byte 0x{raw[exc.start]:02x} here is not valid UTF-8",
        hint="save the file as UTF-8 (it looks like Latin-1 or Windows-1252)",
    )


def merge(base: Document, overlay: Document) -> Document:
    """Overlay wins. Rules (documented in docs/environments.md): mappings merge key by key,
    recursively; every other value, lists included, replaces the base value whole."""
    return Document(*_merge(base.value, base.pos, overlay.value, overlay.pos))


def _merge(bv: Value, bp: Pos, ov: Value, op: Pos) -> tuple[Value, Pos]:
    if not (isinstance(bv, dict) and isinstance(ov, dict)):
        return ov, op
    value = dict(bv)
    pos = Pos(op.at, op.key_at, dict(bp.children))
    for key, item in ov.items():
        if key in bv:
            value[key], pos.children[key] = _merge(bv[key], bp.children[key], item, op.children[key])
        else:
            value[key], pos.children[key] = item, op.children[key]
    return value, pos
