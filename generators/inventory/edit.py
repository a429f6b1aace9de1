"""Change `nodes:` of pools in an environment file with ruamel.yaml round-trip, and prove
that nothing else changed.

ruamel.yaml keeps comments, key order, quoting and flow style, but its emitter can still
re-indent or re-wrap a file written in another style. So the edit is accepted only when
ruamel's output equals the original text with just the number tokens replaced (spliced at
the positions ruamel reports); otherwise we refuse rather than reformat someone's file.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from generators.spec.load import ENV_DIR, MAX_EXTENDS_DEPTH, environment_names

# (mapping indent, sequence indent, dash offset) styles to try, most common first.
INDENT_STYLES = ((2, 4, 2), (2, 2, 0), (4, 4, 2), (4, 6, 4), (4, 4, 0))
_SCALAR_TOKEN = re.compile(r"[^\s#,}\]]+")


class EditRefused(Exception):
    """The file cannot be edited safely; the message is the whole one-line error."""


@dataclass(frozen=True)
class NodeCountEdit:
    path: Path
    display: str  # environments/<file>.yaml
    original: str
    edited: str
    where: dict[str, tuple[int, int]]  # pool -> 1-based (line, column) of its `nodes` value


def _yaml(style: tuple[int, int, int] | None = None) -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 1 << 16  # never re-wrap long lines
    if style:
        yaml.indent(mapping=style[0], sequence=style[1], offset=style[2])
    return yaml


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")  # no newline translation: CRLF stays visible


def _load(path: Path) -> Any:
    return _yaml().load(_read(path))


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
    sharing = [other for other in environment_names(root)
               if other != env_name and defining_file(root, other) == path]
    if sharing:
        raise EditRefused(f"{ENV_DIR}/{path.name}: error: the pools of {env_name} are defined here, "
                          f"shared with {', '.join(sharing)}; move pools: into "
                          f"{ENV_DIR}/{env_name}.yaml before syncing its inventory")


def _dump(data: Any, style: tuple[int, int, int]) -> str:
    out = io.StringIO()
    _yaml(style).dump(data, out)
    return out.getvalue()


def _style_of(data: Any, original: str, display: str) -> tuple[int, int, int]:
    for style in INDENT_STYLES:
        if _dump(data, style) == original:
            return style
    raise EditRefused(f"{display}: error: ruamel.yaml cannot reproduce this file byte for byte (unusual "
                      "indentation or layout); edit nodes: by hand")


def _splice(original: str, where: dict[str, tuple[int, int]], counts: dict[str, int]) -> str:
    lines = original.splitlines(keepends=True)
    for pool, (line, col) in where.items():
        text = lines[line - 1]
        token = _SCALAR_TOKEN.match(text, col - 1)
        assert token is not None, f"no scalar at {line}:{col}"  # ruamel pointed at the value
        lines[line - 1] = text[:token.start()] + str(counts[pool]) + text[token.end():]
    return "".join(lines)


def plan_edit(root: Path, env_name: str, counts: dict[str, int]) -> NodeCountEdit:
    """The edited text of the file that defines the pools; nothing is written here."""
    path = defining_file(root, env_name)
    _refuse_shared_base(root, env_name, path)
    display = f"{ENV_DIR}/{path.name}"
    original = _read(path)
    data = _load(path)
    style = _style_of(data, original, display)
    where: dict[str, tuple[int, int]] = {}
    for pool in data["pools"]:
        if pool["name"] in counts:
            line, col = pool.lc.value("nodes")
            where[pool["name"]] = (line + 1, col + 1)
            pool["nodes"] = counts[pool["name"]]
    edited = _dump(data, style)
    if edited != _splice(original, where, counts):
        raise EditRefused(f"{display}: error: ruamel.yaml would change more than the node counts; "
                          "edit nodes: by hand")
    return NodeCountEdit(path, display, original, edited, where)


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
