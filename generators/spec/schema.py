"""JSON Schema validation of the merged environment, with errors mapped to file:line:col.

The schema files in schemas/ are the single source of field meaning, limits AND defaults:
`apply_defaults` fills missing keys from the schema's `default` keywords, so a default is
never typed twice (once for editors, once in code).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from generators.errors import Problem, format_path
from generators.spec.source import Document
from generators.speedups import schemavalid

if TYPE_CHECKING:  # jsonschema costs ~0.1 s to import: only when a document needs checking
    import jsonschema
    from referencing import Registry

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"
ROOT_SCHEMA = "environment.schema.json"
MAX_PROBLEMS = 20


@cache
def _documents() -> dict[str, dict[str, Any]]:
    """$id -> contents of every schema file."""
    out = {}
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        contents = json.loads(path.read_text())
        out[contents["$id"]] = contents
    return out


def root() -> dict[str, Any]:
    """The environment schema (its $refs to the other files unresolved)."""
    return next(c for c in _documents().values() if c["$id"].endswith(f"/{ROOT_SCHEMA}"))


@cache
def _schemas() -> tuple[dict[str, Any], Registry]:
    from referencing import Registry, Resource

    resources = [(uri, Resource.from_contents(contents)) for uri, contents in _documents().items()]
    registry: Registry = Registry().with_resources(resources)
    return root(), registry


@cache
def _validator() -> jsonschema.Draft202012Validator:
    import jsonschema

    root, registry = _schemas()
    return jsonschema.Draft202012Validator(root, registry=registry)


def check(doc: Document) -> list[Problem]:
    """All schema violations, sorted by position, at most MAX_PROBLEMS.

    A document that passed before with the same code, schemas and libraries is not checked
    again (speedups.schemavalid: rendering one environment then never imports jsonschema)."""
    known = schemavalid.marker(doc.value)
    if known is not None and known.is_file():
        return []
    problems = _check(doc)
    if not problems and known is not None:
        schemavalid.remember(known)
    return problems


def _check(doc: Document) -> list[Problem]:
    errors = sorted(_validator().iter_errors(doc.value), key=lambda e: list(map(str, e.absolute_path)))
    typos = _typo_targets(errors)
    problems = [
        _quantity_problem(doc, e) or _problem(doc, _deepest(e))
        for e in errors
        if not _explained_by_typo(e, typos)
    ]
    problems.sort(key=lambda p: (p.location.file, p.location.line, p.location.col))
    return problems[:MAX_PROBLEMS]


@dataclass(frozen=True)
class Replaced:
    """A key of an earlier release, refused with what replaced it."""

    parent: tuple[str, ...]  # the object holding the key; "[]" stands for any list index
    replacement: str
    why: str
    write: str  # what to write instead (the hint's end)


# Keys of earlier releases, by name, each only in the object it lived in: a key of the same
# name elsewhere is an ordinary unknown key. Reported as "replaced", and the replacement is
# not also reported missing.
_TIER = ("priorities", "tiers", "[]")
_ONE_SCALE = "a tier has one priority for its WorkloadPriorityClass and its PriorityClass"
REPLACED_KEYS: dict[str, tuple[Replaced, ...]] = {
    "workloadPriority": (
        Replaced(
            _TIER,
            "value",
            f"{_ONE_SCALE}: Kueue reads either, so two scales made the order depend on which one a job set",
            "write `value: <n>` once",
        ),
    ),
    "podPriority": (Replaced(_TIER, "value", _ONE_SCALE, "write `value: <n>` once"),),
    "hostLabel": (
        Replaced(
            ("monitoring",),
            "exporters",
            "the host label follows from the dcgm-exporter version the environment runs",
            "write `exporters: {dcgmExporter: <version>}` "
            "(generators/model/exporters.py lists the checked versions)",
        ),
    ),
}


def _replaced(path: tuple[Any, ...], key: str, allowed: list[str]) -> Replaced | None:
    """The replacement of `key` in the object at `path`, if it was replaced there."""
    shape = tuple("[]" if isinstance(part, int) else part for part in path)
    return next(
        (r for r in REPLACED_KEYS.get(key, ()) if r.parent == shape and r.replacement in allowed), None
    )


def _typo_targets(errors: list[jsonschema.ValidationError]) -> set[tuple[tuple[Any, ...], str]]:
    """(object path, key) pairs that an unknown key in that object probably misspells."""
    targets = set()
    for error in errors:
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            schema = error.schema if isinstance(error.schema, dict) else {}
            allowed = list(schema.get("properties", {}))
            for key in set(error.instance) - set(allowed):
                if (replaced := _replaced(tuple(error.absolute_path), key, allowed)) is not None:
                    targets.add((tuple(error.absolute_path), replaced.replacement))
                    continue
                for close in difflib.get_close_matches(key, allowed, n=1):
                    targets.add((tuple(error.absolute_path), close))
    return targets


def _explained_by_typo(error: jsonschema.ValidationError, typos: set[tuple[tuple[Any, ...], str]]) -> bool:
    """A typo'd key also makes the real key 'required': report only the typo."""
    if error.validator != "required":
        return False
    required: Any = error.validator_value
    missing = set(required) - set(error.instance) if isinstance(error.instance, dict) else set()
    return any((tuple(error.absolute_path), key) in typos for key in missing)


EXPLAIN = (
    "a Kubernetes quantity is a number and an optional suffix: Ki Mi Gi Ti Pi Ei (powers of "
    "1024) or k M G T P E (powers of 1000), with no 'B' and no space"
)
_BYTES_SUFFIX = re.compile(
    r"^\s*(?P<num>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[kKmMgGtTpPeE])?(?P<i>i)?[bB](?:ytes?)?\s*$"
)
_SPACED = re.compile(r"^\s*(?P<num>[0-9]+(?:\.[0-9]+)?)\s+(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[kMGTPEm])\s*$")


def not_a_quantity(raw: Any) -> tuple[str, str]:
    """(message, hint) for a value the quantity schema refused: say what a quantity is and
    the likely fix (`1800GB` -> `1800Gi` or `1800G`)."""
    text = str(raw)
    message = f"{text!r} is not a Kubernetes quantity"
    if isinstance(raw, float):
        return (
            f"number {raw} is not a Kubernetes quantity",
            f'quote it ("{raw}") or use a suffix ("500m" for CPU, "1536Mi" for memory); {EXPLAIN}',
        )
    if (match := _BYTES_SUFFIX.match(text)) is not None:
        num, unit = match["num"], (match["unit"] or "").upper().replace("K", "k")
        if not unit:
            return message, f"a bare number counts bytes: write {num}; {EXPLAIN}"
        binary = f"{num}{unit.upper()}i"
        power = _power(unit)
        return message, (
            f"did you mean {binary} ({num} x 2^{power * 10}) or {num}{unit} "
            f"({num} x 10^{power * 3})? {EXPLAIN}"
        )
    if (match := _SPACED.match(text)) is not None:
        return message, f"did you mean {match['num']}{match['suffix']}? {EXPLAIN}"
    return message, EXPLAIN


def _power(unit: str) -> int:
    return "kMGTPE".index(unit if unit != "K" else "k") + 1


def _quantity_problem(doc: Document, error: jsonschema.ValidationError) -> Problem | None:
    """A value refused by a quantity schema (`x-quantity`): say what a quantity is and the
    likely fix, instead of the first oneOf branch's `expected integer`."""
    # A per-node quantity is oneOf(integer, string); the overflow section's are strings only,
    # refused by `pattern` or, for a bare YAML number, by `type`.
    if error.validator not in ("oneOf", "pattern", "type") or not (
        isinstance(error.schema, dict) and error.schema.get("x-quantity")
    ):
        return None
    if not isinstance(error.instance, (str, int, float)) or isinstance(error.instance, bool):
        return None
    if error.validator == "type" and isinstance(error.instance, int):
        message, hint = (
            f"number {error.instance} must be a quoted quantity here",
            f'write "{error.instance}" (a string, as Kubernetes writes quantities)',
        )
    else:
        message, hint = not_a_quantity(error.instance)
    path = tuple(error.absolute_path)
    return Problem(doc.locate(path), message, format_path(path), hint)


def _deepest(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For oneOf/anyOf, the branch error that explains the most (like best_match)."""
    if error.context:
        from jsonschema.exceptions import best_match

        best: jsonschema.ValidationError | None = best_match(error.context)
        if best is not None:
            return best
    return error


# A schema annotation (ignored by validators and editors) carrying the hint for a value the
# schema refuses: the schema file then says why a value is refused and what works instead,
# next to the field, instead of a special case in code. It replaces the generic hint.
HINT = "x-hint"


def _problem(doc: Document, error: jsonschema.ValidationError) -> Problem:
    problem = _generic_problem(doc, error)
    schema = error.schema if isinstance(error.schema, dict) else {}
    if isinstance(schema.get(HINT), str):
        return Problem(problem.location, problem.message, problem.spec_path, schema[HINT])
    return problem


def _generic_problem(doc: Document, error: jsonschema.ValidationError) -> Problem:
    path = tuple(error.absolute_path)
    spec_path = format_path(path)
    instance = error.instance
    schema: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    expected: Any = error.validator_value
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        allowed = sorted(schema.get("properties", {}))
        unknown = sorted(set(instance) - set(allowed))
        if unknown and allowed:
            key = unknown[0]
            if (replaced := _replaced(path, key, allowed)) is not None:
                return Problem(
                    doc.locate((*path, key), key=True),
                    f"{key!r} was replaced by {replaced.replacement!r}",
                    format_path((*path, key)),
                    f"{replaced.why}; {replaced.write}",
                )
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"allowed keys: {', '.join(allowed)}"
            return Problem(
                doc.locate((*path, key), key=True), f"unknown key {key!r}", format_path((*path, key)), hint
            )
    if error.validator == "required":
        return Problem(doc.locate(path), error.message, spec_path)
    if error.validator == "type":
        return Problem(
            doc.locate(path),
            f"expected {expected}, got {_describe(instance)}",
            spec_path,
            "quote values such as 1.30 or yes that YAML would read as numbers or booleans"
            if expected == "string"
            else "",
        )
    if error.validator == "pattern":
        form = PATTERN_WORDS.get(str(expected))
        description = _sentences(schema.get("description", ""))
        if form is None and not description:
            form = f"the form {expected}"  # last resort: a pattern no words were written for
        elif form is not None and description:
            form = form.split(" (")[0]  # the field's description below says the rest
        message = f"{_describe(instance)} is not {form}" if form else f"{_describe(instance)} is refused here"
        return Problem(doc.locate(path), message, spec_path, description)
    if error.validator in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        side = {
            "minimum": "below the minimum of",
            "maximum": "above the maximum of",
            "exclusiveMinimum": "not above",
            "exclusiveMaximum": "not below",
        }[error.validator]
        return Problem(
            doc.locate(path),
            f"{_describe(instance)} is {side} {expected}",
            spec_path,
            _sentences(schema.get("description", "")),
        )
    if error.validator == "enum":
        choices = [str(c) for c in expected]
        close = difflib.get_close_matches(str(instance), choices, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"one of: {', '.join(choices)}"
        return Problem(doc.locate(path), f"{_describe(instance)} is not allowed", spec_path, hint)
    if error.validator == "const":
        return Problem(
            doc.locate(path), f"expected {_describe(expected)}, got {_describe(instance)}", spec_path
        )
    if error.validator == "propertyNames":
        return Problem(doc.locate(path), f"invalid key: {error.message}", spec_path)
    return Problem(doc.locate(path), error.message, spec_path)


# Words for the patterns the schemas share, so a refusal names the form instead of printing
# a regular expression. Keyed by the pattern text itself: a pattern that
# changes falls back to its field's description, never to stale words.
PATTERN_WORDS: dict[str, str] = {
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$": (
        "a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit)"
    ),
    "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$": (
        "a DNS subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit)"
    ),
    (
        "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
        "[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
    ): (
        "a Kubernetes label key or resource name ([prefix/]name: the prefix a DNS subdomain, the name "
        "letters, digits, '-', '_' and '.')"
    ),
    "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$": (
        "a Kubernetes label value (letters, digits, '-', '_' and '.', starting and ending with a "
        "letter or digit)"
    ),
    "^[a-zA-Z_][a-zA-Z0-9_]*$": (
        "a Prometheus label name (letters, digits and '_', not starting with a digit)"
    ),
    "^sha256:[a-f0-9]{64}$": "a content digest (sha256: and 64 lowercase hex digits)",
    "^https?://[^\\s/]+(/\\S*)?$": "an http:// or https:// URL",
}

# A sentence ends at '.', '!' or '?' followed by a space and a capital (or the end), so
# "e.g. v1.13.0" and "0.5." inside a sentence do not cut it short.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def _sentences(description: str, limit: int = 200) -> str:
    """The description as a hint: whole if short, else its first sentence (never a fragment)."""
    text = " ".join(description.split())
    if len(text) <= limit:
        return text.rstrip(".")
    return _SENTENCE_END.split(text, maxsplit=1)[0].rstrip(".")


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if value is None:
        return "null"
    if isinstance(value, str):
        return repr(value) if len(value) < 60 else repr(value[:57] + "...")
    return (
        type(value).__name__
        if not isinstance(value, (dict, list))
        else ("a mapping" if isinstance(value, dict) else "a list")
    )


def apply_defaults(value: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of `value` with every schema default filled in (value must be valid)."""
    document = root()
    return _fill(document, value, document["$id"])  # type: ignore[no-any-return]


def subschema(path: tuple[str, ...]) -> dict[str, Any]:
    """The schema of the value at `path` (mapping keys; "*" for a list item or a mapping's
    value), $refs resolved; {} where the schema does not say."""
    schema, base = root(), root()["$id"]
    for key in path:
        schema, base = _deref(schema, base)
        if key == "*":
            nested = schema.get("items") or schema.get("additionalProperties")
        else:
            nested = schema.get("properties", {}).get(key)
        if not isinstance(nested, dict):
            return {}
        schema = nested
    return _deref(schema, base)[0]


def _deref(schema: dict[str, Any], base: str) -> tuple[dict[str, Any], str]:
    """`schema` with its $refs followed (its own keywords beside the $ref kept), and the $id
    of the file the result is in."""
    while "$ref" in schema:
        resolved, base = _resolve(schema["$ref"], base)
        schema = {**resolved, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema, base


def _resolve(ref: str, base: str) -> tuple[dict[str, Any], str]:
    """The subschema a $ref names, and the $id of the file it is in. Our schemas refer to
    `#/$defs/x` in their own file or to a whole sibling file (`overflow.schema.json`)."""
    uri, _, pointer = urljoin(base, ref).partition("#")
    node: Any = _documents()[uri]
    for part in pointer.split("/")[1:]:
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node, uri


def _fill(schema: dict[str, Any], value: Any, base: str) -> Any:
    schema, base = _deref(schema, base)
    if isinstance(value, dict):
        out = {}
        props: dict[str, Any] = schema.get("properties", {})
        for key, sub in props.items():
            if key in value:
                out[key] = _fill(sub, value[key], base)
            elif "default" in sub:
                out[key] = _fill(sub, json.loads(json.dumps(sub["default"])), base)
        for key, item in value.items():
            if key not in props:
                extra = schema.get("additionalProperties")
                out[key] = _fill(extra, item, base) if isinstance(extra, dict) else item
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_fill(schema["items"], item, base) for item in value]
    return value
