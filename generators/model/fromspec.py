"""Schema sections -> model dataclasses, by one rule: the one place spec keys become fields.

A field holds the property of its section named like it in camelCase (`gpu_temp_for` <-
`gpuTempFor`), taken by the field's type hint:
- a dataclass: the nested object, mapped by the same rule;
- `tuple[X, ...]`: the array, item by item;
- `Mapping[...]`: the object with its keys sorted, so output never depends on the order in
  which a person wrote them;
- `X | None`: None where the property is absent (optional, no schema default);
- anything else: the value as the schema validated and defaulted it.

A field that differs says so next to itself, in its metadata:
- `field(metadata=setting("gpu.model"))`: another key, or a key inside a nested object that
  has no class of its own; `convert=` a function of the value (quantities, copies of
  free-form config, one value turned into another); `absent=` the value when it is missing.
- `field(metadata=inline())`: a dataclass mapped from the section itself, its settings beside
  the holder's (health's controller settings sit beside `backend`, not under a key of their
  own); the builder may still give it (None where it does not apply).
- `field(metadata=derived("cpu", "memory"))`: computed by the builder, from several values or
  from other sections, and handed to `from_spec`; it names the properties of its own section
  it reads.
tests/model/test_fromspec.py walks the schema against these classes (a property the model does
not hold, such as one only a spec check reads, is listed there with what consumes it), so
adding a setting is: the schema property, the field, and nothing else.

One spelling per setting: code reads a setting only through its field, never by the spec key
(the cross-field checks too, in checks/: they read these classes and locate a problem with
spec_path), and a field is named by its key's mechanical snake_case (`reserveNodes` ->
`reserve_nodes`), or its dotted path's (`gpu.model` -> `gpu_model`). So a grep for the key,
or for its snake_case, finds every reader. A field named otherwise names its key in
setting() beside it, and tests/model/test_fromspec.py (OTHER_NAMES) lists it with why; a new
field takes the rule's name.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

D = TypeVar("D")

_KEY = "trainyard.spec"


@dataclass(frozen=True)
class Rule:
    """How one field of a model class gets its value."""

    field: str
    hint: Any  # the resolved type hint
    path: tuple[str, ...]  # keys from the section to the property; (): derived, or inline
    convert: Callable[[Any], Any] | None
    absent: Any  # the value when the property is missing; MISSING: it is always there
    reads: tuple[str, ...] | None  # derived: the properties it reads; None: not derived

    @property
    def derived(self) -> bool:
        return self.reads is not None


@dataclass(frozen=True)
class _Declared:
    path: str | None
    convert: Callable[[Any], Any] | None
    absent: Any
    reads: tuple[str, ...] | None


def setting(
    path: str | None = None, *, convert: Callable[[Any], Any] | None = None, absent: Any = MISSING
) -> dict[str, Any]:
    """Field metadata: the property at dotted `path` (default: the field's camelCase name)."""
    return {_KEY: _Declared(path, convert, absent, None)}


INLINE = "."  # the path of a field whose class reads the holder's own section


def inline(*, absent: Any = MISSING) -> dict[str, Any]:
    """Field metadata: the field's dataclass is mapped from the holder's own section, not from
    a property of it (health: the built-in controller's settings sit beside `backend`)."""
    return {_KEY: _Declared(INLINE, None, absent, None)}


def derived(*reads: str) -> dict[str, Any]:
    """Field metadata: the builder computes this field (from the dotted properties `reads`)."""
    return {_KEY: _Declared(None, None, MISSING, reads)}


def spec_path(cls: type, field: str) -> tuple[str, ...]:
    """The keys from `cls`'s section to the property `field` holds: how a cross-field check
    (checks/) that reads the field locates a problem in the file."""
    rule = next(r for r in rules(cls) if r.field == field)
    if not rule.path:
        raise TypeError(f"{cls.__name__}.{field} is derived or inline: it has no property of its own")
    return rule.path


def spec_key(field: str) -> str:
    """The schema's name for a field: snake_case -> camelCase."""
    head, *rest = field.split("_")
    return head + "".join(word.capitalize() for word in rest)


_RULES: dict[type, tuple[Rule, ...]] = {}  # a class's rules never change: resolve hints once


def rules(cls: type) -> tuple[Rule, ...]:
    """The rule of every field of model class `cls`, in field order."""
    if cls not in _RULES:
        _RULES[cls] = _resolve(cls)
    return _RULES[cls]


def _resolve(cls: type) -> tuple[Rule, ...]:
    hints = get_type_hints(cls)  # every class a hint names is imported by the hint's module
    out = []
    for f in fields(cls):
        declared: _Declared = f.metadata.get(_KEY, _Declared(None, None, MISSING, None))
        if declared.reads is not None or declared.path == INLINE:
            path: tuple[str, ...] = ()
        else:
            path = tuple((declared.path or spec_key(f.name)).split("."))
        out.append(Rule(f.name, hints[f.name], path, declared.convert, declared.absent, declared.reads))
    return tuple(out)


def from_spec(cls: type[D], raw: Mapping[str, Any], given: Mapping[str, Any] | None = None) -> D:
    """Model class `cls` from its validated, defaulted section `raw`.

    `given`: field -> value the builder computed: every derived field (a dotted name reaches
    into a nested dataclass field: "preemption.borrow_max_priority"), and any field whose
    items need derived values of their own (built item by item with from_spec)."""
    own: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for name, value in (given or {}).items():
        head, dot, rest = name.partition(".")
        if dot:
            nested.setdefault(head, {})[rest] = value
        else:
            own[name] = value
    plan = rules(cls)
    unknown = (own.keys() | nested.keys()) - {r.field for r in plan}
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {', '.join(sorted(unknown))}")
    values = {}
    for rule in plan:
        if rule.field in own:
            values[rule.field] = own[rule.field]
        elif rule.derived:
            raise TypeError(f"{cls.__name__}.{rule.field} is derived: the builder must give it")
        else:
            values[rule.field] = _take(rule, raw, nested.get(rule.field))
    return cls(**values)


def take(cls: type, field: str, raw: Mapping[str, Any]) -> Any:
    """One field of `cls`, mapped from section `raw` by its rule (for the builder's derivations,
    which need a part of the model before all of it exists)."""
    rule = next(r for r in rules(cls) if r.field == field)
    return _take(rule, raw, None)


def _take(rule: Rule, raw: Mapping[str, Any], given: dict[str, Any] | None) -> Any:
    value: Any = raw
    for key in rule.path:
        if key not in value:
            if rule.absent is not MISSING:
                return rule.absent
            if _optional(rule.hint):
                return None
        value = value[key]  # a KeyError here: the schema neither requires nor defaults it
    if rule.convert is not None:
        return rule.convert(value)
    return _convert(rule.hint, value, given)


def _optional(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint)


def _convert(hint: Any, value: Any, given: dict[str, Any] | None) -> Any:
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if value is None or len(inner) > 1:  # e.g. int | str: as validated
            return value
        return _convert(inner[0], value, given)
    if isinstance(hint, type) and is_dataclass(hint):
        return from_spec(hint, value, given)
    if given:
        raise TypeError(f"given values reach only into dataclass fields, not {hint}")
    if origin is tuple:
        return tuple(_convert(args[0], item, None) for item in value)
    if origin is Mapping or origin is dict:
        return dict(sorted(value.items()))
    return value
