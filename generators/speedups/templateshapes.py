"""Parse each template's output once per shape; put the values in as data (layer `shapes`).

Parsing template output with PyYAML costs ~0.6 ms per small object and more for large
values (../shared/reference/performance.md), and a fleet renders the same templates thousands
of times with different values. While a template renders, the `y` filter hands out a token
`"⟦yN⟧"` for its N-th value instead of the value's YAML text, and keeps the value. The
text then depends only on the template's control flow (its "shape"): it is parsed once
(cached), and every render fills a fresh copy of that skeleton with its own values.

The result equals parsing the classic text (`y` emitting each value as YAML flow), because
a value's flow text parses back to the value with str keys, lists for tuples (tests prove
both paths give equal objects for every shipped environment). Whenever that cannot be
guaranteed, `NoShape` is raised and the caller parses the classic text instead:
- a value that is not plain data (exact dict, list, tuple, str, int, float, bool, None);
- a token not standing alone as a scalar (inside a longer string, a block literal or a
  comment), used twice (YAML aliases), or carrying a tag (`!!str "⟦y0⟧"`);
- anything else failing (e.g. a token as the key of a mapping that holds a list).
Layer `shapes` decides whether templating uses this module at all. Parsed shapes live in
memory only: keeping them on disk for the next process (a layer `shape-files` once did)
saved nothing measurable (docs/performance.md, "Trim").
"""

from __future__ import annotations

import datetime
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

import yaml

OPEN, CLOSE = "\u27e6y", "\u27e7"  # ⟦y ... ⟧: printable, so a token is the same text in every scalar style
_TOKEN = re.compile(f"{OPEN}([0-9]+){CLOSE}")
_TAGGED_TOKEN = re.compile(f'!\\S*\\s+"{OPEN}')
_IMMUTABLE = (str, int, float, bool, type(None), bytes, datetime.date)

_recording: ContextVar[list[Any] | None] = ContextVar("trainyard_template_slots", default=None)
# Renders that fell back to parsing the classic text, per template (tests read it).
misses: Counter[str] = Counter()


class NoShape(Exception):
    """This render cannot use a parsed shape; parse the classic text instead."""


@contextmanager
def recording() -> Iterator[list[Any]]:
    """While active, token() records values; yields the list they go to."""
    slots: list[Any] = []
    reset = _recording.set(slots)
    try:
        yield slots
    finally:
        _recording.reset(reset)


def token(value: Any) -> str | None:
    """The token text standing for `value`, or None when no render is recording."""
    slots = _recording.get()
    if slots is None:
        return None
    slots.append(_data(value))
    return f'"{OPEN}{len(slots) - 1}{CLOSE}"'


def _data(value: Any) -> Any:
    """A fresh copy of `value` as its YAML flow text parses back (see templating._flow)."""
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return value
    if kind is dict:
        return {_key(k): _data(v) for k, v in value.items()}
    if kind in (list, tuple):
        return [_data(v) for v in value]
    raise NoShape(f"{kind.__name__} is not plain data")


def _key(key: Any) -> str:
    """_flow writes every key as double_quoted(str(key))."""
    if key is None or type(key) in (str, int, float, bool):
        return str(key)
    raise NoShape(f"{type(key).__name__} key")


def fill(text: str, values: list[Any]) -> Any:
    """The object that `text` with each token replaced by its value would parse to."""
    skeleton = _skeleton(text)
    if skeleton is None:
        raise NoShape("tokens do not each stand alone once")
    return _fill(skeleton, values)


@lru_cache(maxsize=2048)
def _skeleton(text: str) -> Any:
    """The parsed text, or None if its tokens are not exactly 0..n-1, each once, alone."""
    if _TAGGED_TOKEN.search(text):
        return None
    try:
        parsed = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return None  # the classic text gives the user the error
    found: list[int] = []
    if not _tokens(parsed, found):
        return None
    return parsed if sorted(found) == list(range(len(_TOKEN.findall(text)))) else None


def _tokens(node: Any, found: list[int]) -> bool:
    """Collect token numbers; False if a token is part of a longer string."""
    if isinstance(node, dict):
        return all(_tokens(k, found) and _tokens(v, found) for k, v in node.items())
    if isinstance(node, list):
        return all(_tokens(v, found) for v in node)
    if isinstance(node, str) and OPEN in node:
        match = _TOKEN.fullmatch(node)
        if match is None:
            return False
        found.append(int(match.group(1)))
    return True


def _fill(node: Any, values: list[Any]) -> Any:
    kind = type(node)
    if kind is dict:
        return {_fill(k, values): _fill(v, values) for k, v in node.items()}
    if kind is list:
        return [_fill(v, values) for v in node]
    if kind is str and node.startswith(OPEN):
        return values[int(node[len(OPEN) : -len(CLOSE)])]  # each used once: no copy needed
    if isinstance(node, _IMMUTABLE):
        return node
    raise NoShape(f"{kind.__name__} in a template's YAML")  # e.g. a !!set: would be shared
