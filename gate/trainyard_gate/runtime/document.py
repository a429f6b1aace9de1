"""YAML text -> plain data plus the line:column of every node, keyed by spec path.

Kept apart from policy.py so the validator can point each error at the exact place in the
file, the way the generators' errors do, without re-parsing.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import yaml

SpecPath: TypeAlias = tuple[str | int, ...]  # ("spec", "gates", 0, "taint")
Position: TypeAlias = tuple[int, int]  # 1-based line, column


class InvalidDocument(ValueError):
    """Not a usable YAML document; `position` is where, when known."""

    def __init__(self, message: str, position: Position | None) -> None:
        super().__init__(message)
        self.position = position


def load_with_positions(text: str) -> tuple[Any, dict[SpecPath, Position]]:
    """Parse one YAML document (safe types only); duplicate keys are refused."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise InvalidDocument("policy file is empty", (1, 1))
        positions: dict[SpecPath, Position] = {}
        _collect(node, (), positions)
        return loader.construct_document(node), positions
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = (mark.line + 1, mark.column + 1) if mark else None
        raise InvalidDocument(f"invalid YAML: {err.problem}", where) from None
    except yaml.YAMLError as err:
        raise InvalidDocument(f"invalid YAML: {err}", None) from None
    except RecursionError:
        raise InvalidDocument("invalid YAML: recursive alias", None) from None
    finally:
        loader.dispose()


def render_path(path: SpecPath) -> str:
    """("spec", "gates", 0, "name") -> "spec.gates[0].name"."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "<document>"


def _collect(node: yaml.Node, path: SpecPath, positions: dict[SpecPath, Position]) -> None:
    positions[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[object] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                where = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                raise InvalidDocument(f"duplicate key ({render_path((*path, key))})", where)
            seen.add(key)
            _collect(value_node, (*path, key), positions)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _collect(item, (*path, index), positions)
