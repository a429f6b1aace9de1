"""Change `nodes:` of pools in an environment file by replacing only the number tokens.

The parser reports where each pool's `nodes` value starts and ends (character offsets), so
the edit is a splice of those spans and nothing else: aligned values (`nodes:   28`),
4-space lists, flow mappings, CRLF line ends, comments and trailing spaces all survive byte
for byte, whatever tool wrote the file. (ruamel.yaml's round-trip emitter, used before,
could only prove that for the few indentation styles it reproduces.) A value that is not a
plain number written in place (an alias, an anchor other lines share, a quoted or tagged
scalar) is refused at its file:line:col with the reason. Afterwards the edited text is
parsed again and must equal the original data with only the counts changed.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from generators.layout import ENV_DIR, environment_names
from generators.spec.load import MAX_EXTENDS_DEPTH

_COUNT = re.compile(r"[0-9]+")
# The pure-Python loader: its marks are offsets into the decoded text, which the splice uses.
_LOADER = yaml.SafeLoader


class EditRefused(Exception):
    """The file cannot be edited safely; the message is the whole one-line error."""


@dataclass(frozen=True)
class NodeCountEdit:
    path: Path
    display: str  # environments/<file>.yaml
    original: str
    edited: str
    where: dict[str, tuple[int, int]]  # pool -> 1-based (line, column) of its `nodes` value


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")  # no newline translation: CRLF stays as it is


def _load(path: Path) -> Any:
    return yaml.load(_read(path), Loader=yaml.CSafeLoader)


def defining_file(root: Path, env_name: str) -> Path:
    """The file of `env_name`'s extends chain that holds `pools:` (lists replace whole, so
    all pools, and every pool's `nodes`, come from one file)."""
    path = root / ENV_DIR / f"{env_name}.yaml"
    for _ in range(MAX_EXTENDS_DEPTH + 1):
        data = _load(path)
        if "pools" in data:
            return path
        if not isinstance(data.get("extends"), str):
            break
        path = path.parent / data["extends"]
    raise EditRefused(f"{ENV_DIR}/{env_name}.yaml: error: no file in its extends chain defines pools:")


def _refuse_shared_base(root: Path, env_name: str, path: Path) -> None:
    if path.name == f"{env_name}.yaml":
        return
    sharing = [
        other for other in environment_names(root) if other != env_name and defining_file(root, other) == path
    ]
    if sharing:
        raise EditRefused(
            f"{ENV_DIR}/{path.name}: error: the pools of {env_name} are defined here, "
            f"shared with {', '.join(sharing)}; move pools: into "
            f"{ENV_DIR}/{env_name}.yaml before syncing its inventory"
        )


def _entry(mapping: yaml.MappingNode, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    for key_node, value_node in mapping.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            return key_node, value_node
    return None


def _count_span(text: str, display: str, pool: str, key: yaml.Node, value: yaml.Node) -> tuple[int, int]:
    """(start, end) offsets of the number to replace, or EditRefused saying where and why."""
    mark = value.start_mark
    where = f"{display}:{mark.line + 1}:{mark.column + 1}"
    written = text[mark.index : value.end_mark.index]
    if mark.index < key.end_mark.index:  # an alias: the node was defined (anchored) earlier
        star = text.index("*", key.end_mark.index)  # the alias token itself
        line = text.count("\n", 0, star) + 1
        col = star - text.rfind("\n", 0, star)
        raise EditRefused(
            f"{display}:{line}:{col}: error: nodes of pool {pool!r} is an alias of the value "
            f"at {mark.line + 1}:{mark.column + 1}: changing it there would change every "
            "user of the anchor; write the count in place, then sync again"
        )
    if not isinstance(value, yaml.ScalarNode) or value.style or not _COUNT.fullmatch(written):
        what = (
            "an anchored value (other places may use it)"
            if written.startswith("&")
            else ("not a plain decimal number")
        )
        raise EditRefused(
            f"{where}: error: nodes of pool {pool!r} is {written.strip()[:40]!r}, {what}; "
            "sync-inventory replaces only a plain number such as `nodes: 28`"
        )
    return mark.index, value.end_mark.index


def plan_edit(root: Path, env_name: str, counts: dict[str, int]) -> NodeCountEdit:
    """The edited text of the file that defines the pools; nothing is written here."""
    path = defining_file(root, env_name)
    _refuse_shared_base(root, env_name, path)
    display = f"{ENV_DIR}/{path.name}"
    original = _read(path)
    root_node = yaml.compose(original, Loader=_LOADER)
    pools = _entry(root_node, "pools") if isinstance(root_node, yaml.MappingNode) else None
    if pools is None or not isinstance(pools[1], yaml.SequenceNode):
        raise EditRefused(f"{display}: error: pools: is not a list here")
    spans: list[tuple[int, int, int]] = []
    where: dict[str, tuple[int, int]] = {}
    for item in pools[1].value:
        name = _entry(item, "name") if isinstance(item, yaml.MappingNode) else None
        if name is None or name[1].value not in counts:
            continue
        pool = str(name[1].value)
        entry = _entry(item, "nodes")
        if entry is None:
            raise EditRefused(
                f"{display}:{item.start_mark.line + 1}:{item.start_mark.column + 1}: error: "
                f"pool {pool!r} has no nodes: here"
            )
        start, end = _count_span(original, display, pool, *entry)
        spans.append((start, end, counts[pool]))
        where[pool] = (entry[1].start_mark.line + 1, entry[1].start_mark.column + 1)
    edited = original
    for start, end, count in sorted(spans, reverse=True):  # back to front: earlier offsets hold
        edited = edited[:start] + str(count) + edited[end:]
    _prove(original, edited, counts, display)
    return NodeCountEdit(path, display, original, edited, where)


def _prove(original: str, edited: str, counts: dict[str, int], display: str) -> None:
    """The edited file means the original with only the counts changed (a guard on the splice)."""
    expected = yaml.load(original, Loader=yaml.CSafeLoader)
    for pool in expected["pools"]:
        if pool.get("name") in counts:
            pool["nodes"] = counts[pool["name"]]
    try:
        meant = yaml.load(edited, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:  # a splice that broke the syntax is refused like any other
        meant = None
    if meant != expected:
        raise EditRefused(
            f"{display}: error: replacing the node counts would change more than them; edit nodes: by hand"
        )


def write(edit: NodeCountEdit) -> None:
    """Replace the file atomically, keeping its permissions."""
    mode = edit.path.stat().st_mode & 0o777
    fd, tmp = tempfile.mkstemp(prefix=f".{edit.path.name}.", dir=edit.path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(edit.edited)
        os.chmod(tmp, mode)
        os.replace(tmp, edit.path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
