"""The schema and the model's dataclasses declare the same settings (generators/model/fromspec.py).

Walks schemas/environment.schema.json (and the files it references) from the root alongside
Environment: every property must be held by a field, read by a derived field, or listed in
its class's SPEC_ELSEWHERE with the reason; every field that is not derived must name a
property, of a matching shape (dataclass <-> object with properties, tuple <-> array,
Mapping <-> object of free keys). The checker is tried on small wrong pairs too, so it is
known to fail when they disagree.
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, is_dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar, Union, get_args, get_origin

import pytest

import generators.model.build  # noqa: F401  (loads every model module: hints name their classes)
from generators.model.fromspec import derived, from_spec, rules, setting, spec_key
from generators.model.types import Environment

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
Keys = tuple[str, ...]


@dataclass(frozen=True)
class Node:
    """A schema object and the document it sits in (for its `#/$defs/...` references)."""

    schema: Mapping[str, Any]
    document: Mapping[str, Any]


def load(name: str) -> Node:
    document = json.loads((SCHEMAS / name).read_text())
    return Node(document, document)


def resolve(node: Node) -> Node:
    while "$ref" in node.schema:
        file, _, pointer = node.schema["$ref"].partition("#")
        target = load(file) if file else Node(node.document, node.document)
        schema = target.schema
        for part in filter(None, pointer.split("/")):
            schema = schema[part]
        node = Node(schema, target.document)
    return node


def lookup(node: Node, path: Keys) -> Node | None:
    for key in path:
        properties = resolve(node).schema.get("properties", {})
        if key not in properties:
            return None
        node = Node(properties[key], node.document)
    return resolve(node)


def mismatches(cls: type, node: Node, where: str) -> list[str]:
    """What the schema object `node` and model class `cls` disagree on (empty: nothing)."""
    problems: list[str] = []
    held: set[Keys] = set()  # properties consumed whole, as paths from `node`
    mapped: set[Keys] = set()
    for rule in rules(cls):
        if rule.reads is not None:
            for read in rule.reads:
                path = tuple(read.split("."))
                if lookup(node, path) is None:
                    problems.append(f"{where}: {cls.__name__}.{rule.field} reads {read}, "
                                    "which is no property")
                held.add(path)
            continue
        dotted = ".".join(rule.path)
        target = lookup(node, rule.path)
        if target is None:
            problems.append(f"{where}: {cls.__name__}.{rule.field} has no property {dotted}")
            continue
        held.add(rule.path)
        mapped.add(rule.path)
        if rule.convert is None:  # a converter takes the value whole, whatever its shape
            owner = f"{cls.__name__}.{rule.field}"
            problems += shape_mismatches(rule.hint, target, f"{where}.{dotted}", owner)
    elsewhere: Mapping[str, str] = getattr(cls, "SPEC_ELSEWHERE", {})
    for key, reason in elsewhere.items():
        if lookup(node, (key,)) is None:
            problems.append(f"{where}: {cls.__name__}.SPEC_ELSEWHERE names {key}, which is no property")
        elif (key,) in mapped:
            problems.append(f"{where}: {cls.__name__}.SPEC_ELSEWHERE names {key}, which a field holds")
        if not reason.strip():
            problems.append(f"{where}: {cls.__name__}.SPEC_ELSEWHERE gives no reason for {key}")
        held.add((key,))
    problems += [f"{where}.{'.'.join(p)}: no field of {cls.__name__} holds it, reads it or lists it "
                 "in SPEC_ELSEWHERE" for p in unheld(node, (), held)]
    return problems


def unheld(node: Node, prefix: Keys, held: set[Keys]) -> list[Keys]:
    """Properties below `node` that no path in `held` covers: a property is covered when held
    whole, or when it is an object all of whose own properties are covered."""
    out: list[Keys] = []
    for key, sub in resolve(node).schema.get("properties", {}).items():
        path = (*prefix, key)
        if path in held:
            continue
        if any(h[:len(path)] == path for h in held):
            out += unheld(Node(sub, node.document), path, held)
        else:
            out.append(path)
    return out


def shape_mismatches(hint: Any, node: Node, where: str, owner: str) -> list[str]:
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return shape_mismatches(inner[0], node, where, owner) if len(inner) == 1 else []
    schema = node.schema
    if isinstance(hint, type) and is_dataclass(hint):
        if "properties" not in schema:
            return [f"{where}: {owner} is a {hint.__name__}, the schema has no object with properties"]
        return mismatches(hint, node, where)
    if origin is tuple:
        if schema.get("type") != "array":
            return [f"{where}: {owner} is a tuple, the schema has no array"]
        return shape_mismatches(args[0], resolve(Node(schema["items"], node.document)), f"{where}[]", owner)
    if origin is Mapping or origin is dict:
        if schema.get("type") != "object" or "properties" in schema:
            return [f"{where}: {owner} is a Mapping, the schema has no object of free keys"]
        return []
    if schema.get("type") in ("object", "array"):
        return [f"{where}: {owner} is a {hint}, the schema has an {schema['type']}"]
    return []


def test_every_setting_is_declared_once_in_schema_and_model() -> None:
    assert mismatches(Environment, load("environment.schema.json"), "environment") == []


def test_camel_case_rule() -> None:
    assert spec_key("gpu_temp_limit_celsius") == "gpuTempLimitCelsius"
    assert spec_key("name") == "name"


# Small wrong pairs: the checker must name each disagreement.

@dataclass(frozen=True)
class Inner:
    limit_seconds: int


@dataclass(frozen=True)
class Outer:
    SPEC_ELSEWHERE: ClassVar[Mapping[str, str]] = {"legacy": "kept for old files"}

    name: str
    inner: Inner
    codes: tuple[int, ...]
    labels: Mapping[str, str]
    nick: str | None
    total: int = field(metadata=derived("parts"))


def _schema(**overrides: Any) -> Node:
    properties: dict[str, Any] = {
        "name": {"type": "string"},
        "inner": {"type": "object", "properties": {"limitSeconds": {"type": "integer"}}},
        "codes": {"type": "array", "items": {"type": "integer"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "nick": {"type": "string"},
        "parts": {"type": "array", "items": {"type": "integer"}},
        "legacy": {"type": "boolean"},
    }
    properties.update(overrides)
    document = {"type": "object", "properties": {k: v for k, v in properties.items() if v is not None}}
    return Node(document, document)


def test_checker_accepts_a_matching_pair() -> None:
    assert mismatches(Outer, _schema(), "outer") == []


@pytest.mark.parametrize(("overrides", "expected"), [
    ({"extra": {"type": "integer"}}, "outer.extra: no field of Outer holds it"),
    ({"inner": {"type": "object", "properties": {"limitSeconds": {"type": "integer"},
                                                  "graceSeconds": {"type": "integer"}}}},
     "outer.inner.graceSeconds: no field of Inner holds it"),
    ({"codes": None}, "outer: Outer.codes has no property codes"),
    ({"parts": None}, "outer: Outer.total reads parts, which is no property"),
    ({"legacy": None}, "outer: Outer.SPEC_ELSEWHERE names legacy, which is no property"),
    ({"codes": {"type": "object", "properties": {}}},
     "outer.codes: Outer.codes is a tuple, the schema has no array"),
    ({"labels": {"type": "array", "items": {}}}, "outer.labels: Outer.labels is a Mapping"),
    ({"inner": {"type": "integer"}}, "outer.inner: Outer.inner is a Inner, the schema has no object"),
    ({"name": {"type": "object", "properties": {}}}, "outer.name: Outer.name is a <class 'str'>"),
])
def test_checker_names_each_disagreement(overrides: dict[str, Any], expected: str) -> None:
    problems = mismatches(Outer, _schema(**overrides), "outer")
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_checker_refuses_a_property_both_held_and_listed_elsewhere() -> None:
    @dataclass(frozen=True)
    class Twice:
        SPEC_ELSEWHERE: ClassVar[Mapping[str, str]] = {"name": "twice"}
        name: str

    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    assert mismatches(Twice, Node(schema, schema), "twice") == [
        "twice: Twice.SPEC_ELSEWHERE names name, which a field holds"]


# The mapping itself.

def test_from_spec_maps_by_rule() -> None:
    raw = {"name": "a", "inner": {"limitSeconds": 3}, "codes": [2, 1], "labels": {"z": "1", "a": "2"},
           "parts": [1, 2], "legacy": True}
    outer = from_spec(Outer, raw, {"total": 3})
    assert outer == Outer("a", Inner(3), (2, 1), {"a": "2", "z": "1"}, None, 3)
    assert list(outer.labels) == ["a", "z"]  # keys sorted: output never follows file order


def test_from_spec_wants_every_derived_field_and_only_fields() -> None:
    raw = {"name": "a", "inner": {"limitSeconds": 3}, "codes": [], "labels": {}}
    with pytest.raises(TypeError, match=r"Outer.total is derived"):
        from_spec(Outer, raw)
    with pytest.raises(TypeError, match=r"Outer has no field totl"):
        from_spec(Outer, raw, {"total": 1, "totl": 1})


@dataclass(frozen=True)
class Counted:
    limit_seconds: int
    count: int = field(metadata=derived())


def test_from_spec_gives_into_nested_classes_and_converts() -> None:
    @dataclass(frozen=True)
    class Held:
        counted: Counted
        ratio: Fraction = field(metadata=setting("ratioText", convert=Fraction))
        levels: tuple[str, ...] = field(metadata=setting("topology.levels", absent=()))

    raw: dict[str, Any] = {"counted": {"limitSeconds": 3}, "ratioText": "3/4"}
    assert from_spec(Held, raw, {"counted.count": 9}) == Held(Counted(3, 9), Fraction(3, 4), ())
    raw["topology"] = {"levels": ["a", "b"]}
    assert from_spec(Held, raw, {"counted.count": 9}).levels == ("a", "b")
