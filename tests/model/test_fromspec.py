"""The schema and the model's dataclasses declare the same settings (generators/model/fromspec.py).

Walks schemas/environment.schema.json (and the files it references) from the root alongside
Environment: every property must be held by a field, read by a derived field, or listed in
ELSEWHERE below with what consumes it; every field that is not derived must name a
property, of a matching shape (dataclass <-> object with properties, tuple <-> array,
Mapping <-> object of free keys). The checker is tried on small wrong pairs too, so it is
known to fail when they disagree.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, is_dataclass
from fractions import Fraction
from typing import Any, Union, get_args, get_origin

import pytest

from generators.model.environment import Environment
from generators.model.fromspec import derived, from_spec, inline, rules, setting, spec_key
from generators.model.health import CONDITIONS, Condition
from tests.support import ROOT

SCHEMAS = ROOT / "schemas"
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


# Schema properties the model holds no field for, and what consumes them instead.
ELSEWHERE = {
    "environment.extends": "spec/load.py merges the base file in before the model sees the value",
    "environment.example": "model/checks/example.py: an example's placeholders are no warning",
    "environment.whatif": "diff/whatif.py: the PR's what-if replay reads it; nothing renders from it",
    "environment.pools[].exoticHardware": "model/checks/quantities.py: lifts the plausibility bounds of the "
    "per-node amounts",
    "environment.kueue.waitForPodsReady.enabled": "the schema admits only true: Kueue v0.19 has no "
    "switch for it",
    "environment.overflow.requireImageDigests": "model/checks/overflow.py refuses an image without a digest",
    **{
        f"environment.overflow.gate.{key}": "Provider.band, derived in build_overflow: staggered down "
        "the fill order"
        for key in (
            "closeWhenFreeGpusAtLeast",
            "closeAfterSeconds",
            "openWhenFreeGpusBelow",
            "openAfterSeconds",
            "staggerFreeGpus",
            "staggerOpenSeconds",
        )
    },
}


def mismatches(cls: type, node: Node, where: str, elsewhere: Mapping[str, str]) -> list[str]:
    """What the schema object `node` (at `where`) and model class `cls` disagree on; `elsewhere`:
    properties (as `where.key` paths) that are consumed outside the model, with the reason."""
    walk = Walk(elsewhere)
    walk.compare(cls, node, where)
    walk.problems += [
        f"{path}: listed as consumed elsewhere, but the walk met no such unheld property"
        for path in elsewhere
        if path not in walk.seen
    ]
    return walk.problems


@dataclass
class Walk:
    elsewhere: Mapping[str, str]
    seen: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)

    def compare(self, cls: type, node: Node, where: str) -> None:
        held = self.hold(cls, node, where)
        for keys in self.unheld(node, (), held, where):
            self.problems.append(
                f"{where}.{'.'.join(keys)}: no field of {cls.__name__} holds it or "
                "reads it, nor is it listed as consumed elsewhere"
            )

    def hold(self, cls: type, node: Node, where: str) -> set[Keys]:
        """The properties of `node` that `cls` consumes whole, as keys from `node` (an inline
        field's class consumes properties of the same node); shapes checked on the way."""
        held: set[Keys] = set()
        for rule in rules(cls):
            owner = f"{cls.__name__}.{rule.field}"
            if rule.reads is None and not rule.path:  # inline: the same section
                inner = [
                    a for a in (*get_args(rule.hint), rule.hint) if isinstance(a, type) and is_dataclass(a)
                ]
                if not inner:
                    self.problems.append(f"{where}: {owner} is inline but no dataclass")
                else:
                    held |= self.hold(inner[0], node, where)
                continue
            if rule.reads is not None:
                for read in rule.reads:
                    keys = tuple(read.split("."))
                    if lookup(node, keys) is None:
                        self.problems.append(f"{where}: {owner} reads {read}, which is no property")
                    held.add(keys)
                continue
            dotted = ".".join(rule.path)
            target = lookup(node, rule.path)
            if target is None:
                self.problems.append(f"{where}: {owner} has no property {dotted}")
                continue
            held.add(rule.path)
            if rule.convert is None:  # a converter takes the value whole, whatever its shape
                self.shape(rule.hint, target, f"{where}.{dotted}", owner)
        return held

    def unheld(self, node: Node, prefix: Keys, held: set[Keys], where: str) -> list[Keys]:
        """Properties below `node` that nothing covers: a property is covered when held whole,
        listed in `elsewhere`, or an object all of whose own properties are covered."""
        out: list[Keys] = []
        for key, sub in resolve(node).schema.get("properties", {}).items():
            keys = (*prefix, key)
            path = f"{where}.{'.'.join(keys)}"
            if path in self.elsewhere:
                self.seen.add(path)
                if keys in held:
                    self.problems.append(f"{path}: held by a field and listed as consumed elsewhere")
                elif not self.elsewhere[path].strip():
                    self.problems.append(f"{path}: listed as consumed elsewhere without a reason")
            elif keys in held:
                continue
            elif any(h[: len(keys)] == keys for h in held):
                out += self.unheld(Node(sub, node.document), keys, held, where)
            else:
                out.append(keys)
        return out

    def shape(self, hint: Any, node: Node, where: str, owner: str) -> None:
        origin, args = get_origin(hint), get_args(hint)
        schema = node.schema
        if origin in (Union, types.UnionType):
            inner = [a for a in args if a is not type(None)]
            if len(inner) == 1:
                self.shape(inner[0], node, where, owner)
        elif isinstance(hint, type) and is_dataclass(hint):
            if "properties" in schema:
                self.compare(hint, node, where)
            else:
                self.problems.append(
                    f"{where}: {owner} is a {hint.__name__}, the schema has no object with properties"
                )
        elif origin is tuple:
            if schema.get("type") == "array":
                self.shape(args[0], resolve(Node(schema["items"], node.document)), f"{where}[]", owner)
            else:
                self.problems.append(f"{where}: {owner} is a tuple, the schema has no array")
        elif origin is Mapping or origin is dict:
            if schema.get("type") != "object" or "properties" in schema:
                self.problems.append(f"{where}: {owner} is a Mapping, the schema has no object of free keys")
        elif schema.get("type") in ("object", "array"):
            self.problems.append(f"{where}: {owner} is a {hint}, the schema has an {schema['type']}")


def test_every_setting_is_declared_once_in_schema_and_model() -> None:
    assert mismatches(Environment, load("environment.schema.json"), "environment", ELSEWHERE) == []


def test_every_health_condition_setting_is_declared_once() -> None:
    """Controller.conditions is derived (one Condition per CONDITIONS entry, in precedence
    order), so the walk above stops at `conditions`; each Condition is mapped by rule from its
    entry, whose shape is the schema's $defs/condition."""
    health = load("health.schema.json")
    condition = Node(health.schema["$defs"]["condition"], health.document)
    assert mismatches(Condition, condition, "health.$defs.condition", {}) == []
    entries = resolve(lookup(health, ("conditions",)) or health).schema["properties"]
    assert [kind.spec_key for kind in CONDITIONS] == list(entries)
    assert all(e["$ref"] == "#/$defs/condition" for e in entries.values())


def test_camel_case_rule() -> None:
    assert spec_key("gpu_temp_limit_celsius") == "gpuTempLimitCelsius"
    assert spec_key("name") == "name"


def snake_case(key: str) -> str:
    """A spec key's mechanical snake_case: reserveNodes -> reserve_nodes, repoURL -> repo_url."""
    key = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", key)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key).lower()


def test_snake_case_rule() -> None:
    assert snake_case("reserveNodes") == "reserve_nodes"
    assert snake_case("kubernetesVersion") == "kubernetes_version"
    assert snake_case("repoURL") == "repo_url"
    assert snake_case("closeWhenFreeGpusAtLeast") == "close_when_free_gpus_at_least"
    assert snake_case("name") == "name"


# Fields named otherwise than their property (each names its key in setting() beside it, where
# a grep for the key finds it), and why. A new field takes the rule's name.
OTHER_NAMES = {
    "ArgoCD.automated": "syncPolicy, converted to a bool: whether Argo CD syncs by itself",
    "KueueOptions.fair_sharing": "fairSharing.enabled: the switch of Kueue's fairSharing block, "
    "read under this name by templates/kueue/configuration.yaml.j2",
    "KueueOptions.fair_sharing_strategies": "fairSharing.preemptionStrategies, read under this "
    "name by templates/kueue/configuration.yaml.j2",
    "Monitoring.dcgm_config_map": "dcgmExporter.configMapName, read under this name by the "
    "monitoring components and doctor",
    "Monitoring.dcgm_namespace": "dcgmExporter.namespace, read under this name by the PromQL "
    "vocabulary and the monitoring installers",
    "Pool.gpus_per_node": "gpu.perNode (GPUs of the node, not gpu_per_node), read under this name "
    "by the components, box, what-if and tests (about 20 modules)",
    "Provider.credentials": "credentialsSecret, a SecretRef (name and key), read under this name by "
    "the overflow components and provider contracts",
}


def model_classes(root: type = Environment) -> list[type]:
    """Every dataclass the model reaches from `root` through its fields' type hints."""
    found: dict[type, None] = {}
    todo = [root]
    while todo:
        cls = todo.pop()
        if cls in found:
            continue
        found[cls] = None
        for rule in rules(cls):
            args = [rule.hint, *get_args(rule.hint)]
            args += [inner for arg in args[1:] for inner in get_args(arg)]
            todo += [a for a in args if isinstance(a, type) and is_dataclass(a)]
    return sorted(found, key=lambda c: c.__name__)


def other_names(classes: list[type]) -> dict[str, str]:
    """Class.field -> its dotted property, for each field that maps a property but is named
    neither its key's snake_case (reserveNodes -> reserve_nodes) nor its dotted path's
    (gpu.model -> gpu_model)."""
    out = {}
    for cls in classes:
        for rule in rules(cls):
            if not rule.path:  # derived or inline: it names what it reads in its metadata
                continue
            named = {snake_case(rule.path[-1]), "_".join(snake_case(k) for k in rule.path)}
            if rule.field not in named:
                out[f"{cls.__name__}.{rule.field}"] = ".".join(rule.path)
    return out


def test_each_setting_is_spelled_as_its_key() -> None:
    """A grep for a spec key finds its field: the field is the key's snake_case (or its dotted
    path's), or setting() beside it names the key and OTHER_NAMES says why it differs. A
    property no field holds is read by a derived field (named in derived() beside it) or
    listed in ELSEWHERE (test_every_setting_is_declared_once_in_schema_and_model)."""
    classes = model_classes()
    assert Condition in classes and len(classes) > 30, "the walk reaches every section"
    found = other_names(classes)
    unlisted = {name: key for name, key in found.items() if name not in OTHER_NAMES}
    assert unlisted == {}, "name these fields by their key's snake_case, or list them in OTHER_NAMES"
    assert set(OTHER_NAMES) <= set(found), "OTHER_NAMES entries now named by the rule: delete them"
    assert all(reason.strip() for reason in OTHER_NAMES.values())


def test_a_field_named_otherwise_is_found() -> None:
    @dataclass(frozen=True)
    class Section:
        reserve_nodes: int
        gpu_model: str = field(metadata=setting("gpu.model"))
        spare: int = field(metadata=setting("reserveNodes"))
        total: int = field(metadata=derived("nodes"))

    assert other_names([Section]) == {"Section.spare": "reserveNodes"}


# Small wrong pairs: the checker must name each disagreement.


@dataclass(frozen=True)
class Inner:
    limit_seconds: int


@dataclass(frozen=True)
class Outer:
    name: str
    inner: Inner
    codes: tuple[int, ...]
    labels: Mapping[str, str]
    nick: str | None
    total: int = field(metadata=derived("parts"))


def _object(properties: dict[str, Any], overrides: dict[str, Any]) -> Node:
    """An object schema of `properties`, each override replacing one (None: removing it)."""
    merged = {**properties, **overrides}
    document = {"type": "object", "properties": {k: v for k, v in merged.items() if v is not None}}
    return Node(document, document)


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
    return _object(properties, overrides)


OUTER_ELSEWHERE = {"outer.legacy": "kept for old files"}


def _one_problem(problems: list[str], expected: str | None) -> None:
    """No problem when `expected` is None, else exactly one, starting with it."""
    if expected is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_checker_accepts_a_matching_pair() -> None:
    assert mismatches(Outer, _schema(), "outer", OUTER_ELSEWHERE) == []


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"extra": {"type": "integer"}}, "outer.extra: no field of Outer holds it"),
        (
            {
                "inner": {
                    "type": "object",
                    "properties": {"limitSeconds": {"type": "integer"}, "graceSeconds": {"type": "integer"}},
                }
            },
            "outer.inner.graceSeconds: no field of Inner holds it",
        ),
        ({"codes": None}, "outer: Outer.codes has no property codes"),
        ({"parts": None}, "outer: Outer.total reads parts, which is no property"),
        ({"legacy": None}, "outer.legacy: listed as consumed elsewhere, but the walk met no such"),
        ({"legacy": {"type": "object", "properties": {"old": {"type": "string"}}}}, None),
        (
            {"codes": {"type": "object", "properties": {}}},
            "outer.codes: Outer.codes is a tuple, the schema has no array",
        ),
        ({"labels": {"type": "array", "items": {}}}, "outer.labels: Outer.labels is a Mapping"),
        ({"inner": {"type": "integer"}}, "outer.inner: Outer.inner is a Inner, the schema has no object"),
        ({"name": {"type": "object", "properties": {}}}, "outer.name: Outer.name is a <class 'str'>"),
    ],
)
def test_checker_names_each_disagreement(overrides: dict[str, Any], expected: str | None) -> None:
    _one_problem(mismatches(Outer, _schema(**overrides), "outer", OUTER_ELSEWHERE), expected)


@pytest.mark.parametrize(
    ("elsewhere", "expected"),
    [
        (
            {**OUTER_ELSEWHERE, "outer.name": "twice"},
            "outer.name: held by a field and listed as consumed elsewhere",
        ),
        ({"outer.legacy": " "}, "outer.legacy: listed as consumed elsewhere without a reason"),
        ({}, "outer.legacy: no field of Outer holds it or reads it, nor is it listed as consumed elsewhere"),
    ],
)
def test_checker_wants_each_elsewhere_entry_true_and_reasoned(
    elsewhere: dict[str, str], expected: str
) -> None:
    assert mismatches(Outer, _schema(), "outer", elsewhere) == [expected]


# The mapping itself.


def test_from_spec_maps_by_rule() -> None:
    raw = {
        "name": "a",
        "inner": {"limitSeconds": 3},
        "codes": [2, 1],
        "labels": {"z": "1", "a": "2"},
        "parts": [1, 2],
        "legacy": True,
    }
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


@dataclass(frozen=True)
class Holder:
    """A holder whose Inner settings sit beside its own (as health's controller's do)."""

    kind: str
    detail: Inner | None = field(metadata=inline())


def _holder_schema(**overrides: Any) -> Node:
    return _object({"kind": {"type": "string"}, "limitSeconds": {"type": "integer"}}, overrides)


def test_from_spec_maps_an_inline_class_from_the_same_section() -> None:
    raw = {"kind": "a", "limitSeconds": 3}
    assert from_spec(Holder, raw) == Holder("a", Inner(3))
    assert from_spec(Holder, {"kind": "b"}, {"detail": None}) == Holder("b", None)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, None),
        ({"limitSeconds": None}, "holder: Inner.limit_seconds has no property limitSeconds"),
        ({"graceSeconds": {"type": "integer"}}, "holder.graceSeconds: no field of Holder holds it"),
    ],
)
def test_checker_walks_an_inline_class_in_its_holders_section(
    overrides: dict[str, Any], expected: str | None
) -> None:
    _one_problem(mismatches(Holder, _holder_schema(**overrides), "holder", {}), expected)
