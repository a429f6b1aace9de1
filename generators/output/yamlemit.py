"""Canonical YAML for the objects we render: fast, byte-stable, safe under YAML 1.1.

Why our own emitter: PyYAML's dumper (even the C one, CSafeDumper in PyYAML 6.0) costs
~0.6 ms per small object, and emission dominates a render (docs/performance.md). We only ever emit
plain data (dict, list, str, int, float, bool, None), so a small emitter is enough.
Rules, all chosen so that PyYAML's safe loader (YAML 1.1, as Kubernetes tooling reads it)
loads exactly the object back (tests/output/test_yamlemit.py proves it with hypothesis):
- block style; sequences are not indented under their key (kubectl's style);
- key order is the order the generator built (templates fix it; user maps arrive sorted);
- a string is plain only if the YAML 1.1 resolver would read it back as that same string
  and it has no character with meaning in YAML; otherwise it is double-quoted;
- multi-line strings (dashboards, CSV, embedded configs) use literal blocks when that is
  exact, so that diffs stay readable.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

import yaml

# Plain scalars: start with a safe character, no ': ' or ' #', no leading/trailing blanks.
_PLAIN = re.compile(r"[A-Za-z0-9_./]([A-Za-z0-9_./@+,;()' -]*[A-Za-z0-9_./@+)-])?")
_RESOLVER = yaml.resolver.Resolver()
_STR_TAG = "tag:yaml.org,2002:str"
_INDENT = "  "


@lru_cache(maxsize=65536)
def scalar(text: str) -> str:
    """A one-line YAML scalar for `text`: plain when that round-trips, else double-quoted."""
    if (
        _PLAIN.fullmatch(text)
        and _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR_TAG  # type: ignore[no-untyped-call]
        and not _looks_numeric_in_yaml12(text)
        and text not in _GO_YAML11_BOOLEANS
    ):
        return text
    return double_quoted(text)


# Booleans of the YAML 1.1 spec that PyYAML's resolver does not treat as such but Go's
# sigs.k8s.io/yaml (helm, kubectl, Argo CD) does: a label value `y` would reach the API
# server as true (tests/oracles/test_yaml_quoting.py, read back by the pinned helm).
_GO_YAML11_BOOLEANS = frozenset({"y", "Y", "n", "N"})


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\x00": "\\0"}
_ESCAPE_TABLE = str.maketrans(_ESCAPES)


def double_quoted(text: str) -> str:
    """YAML double-quoted scalar: printable characters as they are, the rest escaped
    (\\uXXXX or \\UXXXXXXXX; JSON's surrogate pairs are not valid YAML)."""
    # Fast path, in C: once the named escapes are replaced, a wholly printable result is
    # exactly what the loop below would build (dashboard JSON is ~25 kB of such text).
    escaped = text.translate(_ESCAPE_TABLE)
    if escaped.isprintable() and "\ufeff" not in escaped:
        return f'"{escaped}"'
    return _double_quoted_by_char(text)


def _double_quoted_by_char(text: str) -> str:
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char.isprintable() and char != "\ufeff":
            out.append(char)
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


_YAML12_NUMBER = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|0o[0-7]+|0x[0-9a-fA-F]+")


def _looks_numeric_in_yaml12(text: str) -> bool:
    """Quote what a YAML 1.2 reader (Go's yaml.v3, e.g. in kubectl) would read as a number."""
    return _YAML12_NUMBER.fullmatch(text) is not None


def _literal_ok(text: str) -> bool:
    """Whether a literal block gives back exactly `text`: every line printable, none ending
    in a blank (a line of blanks only included: the only printable blank is ' ')."""
    if "\n" not in text or "\r" in text or text.startswith((" ", "\n")):
        return False
    body = text[:-1] if text.endswith("\n") else text
    if body.endswith(("\n", " ")):
        return False  # several trailing newlines would need '|+'
    return " \n" not in body and body.replace("\n", "").isprintable()  # in C: dashboards are 25 kB


def float_text(value: float) -> str:
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    if "e" in text and "." not in text.split("e")[0]:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"  # YAML 1.1 floats need a dot
    if "e" in text and text.split("e")[1][0] not in "+-":
        text = text.replace("e", "e+")
    return text


def plain_scalar(value: Any) -> str | None:
    """The text of null, a bool or a number, the same in block and flow style (the templates'
    `y` filter writes these too); None for a string, a collection or anything else."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return float_text(value)
    return None


def _atom(value: Any) -> str | None:
    """Inline form of a scalar or empty collection; None for a non-empty collection."""
    if isinstance(value, str):
        return scalar(value)
    if isinstance(value, dict):
        return None if value else "{}"
    if isinstance(value, (list, tuple)):
        return None if value else "[]"
    text = plain_scalar(value)
    if text is None:
        raise TypeError(f"cannot emit {type(value).__name__} as YAML")
    return text


def _block(value: str, indent: str) -> str:
    chomp = "" if value.endswith("\n") else "-"
    body = value[:-1] if value.endswith("\n") else value
    lines = [f"{indent}{line}" if line else "" for line in body.split("\n")]
    return f"|{chomp}\n" + "\n".join(lines)


def _inline(item: Any, indent: str) -> str | None:
    """What follows `key:` or `-` on its own line: a literal block or an atom; None for a
    non-empty mapping or sequence, whose lines go below."""
    if isinstance(item, str) and _literal_ok(item):
        return _block(item, indent + _INDENT)
    return _atom(item)


def _emit(value: Any, indent: str, out: list[str]) -> None:
    """Append the lines of a non-empty mapping or sequence at `indent`."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"mapping keys must be strings, got {key!r}")
            head = f"{indent}{scalar(key)}:"
            inline = _inline(item, indent)
            if inline is not None:
                out.append(f"{head} {inline}")
            else:
                out.append(head)
                _emit(item, indent if isinstance(item, (list, tuple)) else indent + _INDENT, out)
        return
    for item in value:
        inline = _inline(item, indent)
        if inline is not None:
            out.append(f"{indent}- {inline}")
            continue
        start = len(out)
        _emit(item, indent + _INDENT, out)
        # Put the first line of the nested block on the dash line: "- name: x".
        out[start] = f"{indent}- {out[start][len(indent) + len(_INDENT) :]}"


def dump(value: Any) -> str:
    """One YAML document (no '---'), ending in a newline."""
    atom = _atom(value)
    if atom is not None:
        return atom + "\n"
    out: list[str] = []
    _emit(value, "", out)
    return "\n".join(out) + "\n"
