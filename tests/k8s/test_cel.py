"""generators/k8s/cel.py: each fragment evaluated by a real CEL evaluator (cel-python) on
literal objects. The fragments use only standard CEL (has, all, in, ?:, literals), which
Kubernetes' CEL evaluates the same way; the rendered policies that embed them run on the
apiserver in tests/controlplane/test_health_admission.py and test_priority_scope.py."""

from __future__ import annotations

from typing import Any

import celpy
import pytest
from celpy.adapter import json_to_cel

from generators.k8s.cel import field, literal, same_map_except, taints


def _evaluate(expression: str, **activation: Any) -> Any:
    env = celpy.Environment()
    program = env.program(env.compile(expression))
    return program.evaluate({name: json_to_cel(value) for name, value in activation.items()})


@pytest.mark.parametrize("value", ['a "quoted" \\ value', ["x", "y"], {"k": "v"}])
def test_literal_reads_back_as_the_value(value: Any) -> None:
    assert _evaluate(f"{literal(value)} == expected", expected=value)


def test_taints_of_a_node_without_any_are_empty() -> None:
    node = {"metadata": {"name": "n"}, "spec": {}}
    assert _evaluate(f"size({taints('object')})", object=node) == 0
    assert _evaluate(f"size({taints('object')})", object={"metadata": {"name": "n"}}) == 0
    tainted = {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}
    assert _evaluate(f"{taints('object')}[0].key", object=tainted) == "k"


def test_field_falls_back_when_absent() -> None:
    expr = field("object", "metadata", "labels", "{}")
    assert _evaluate(f"size({expr})", object={"metadata": {}}) == 0
    assert _evaluate(f"{expr}['a']", object={"metadata": {"labels": {"a": "1"}}}) == "1"


@pytest.mark.parametrize("exempt", ["reason", ["reason", "since"]])
@pytest.mark.parametrize(
    ("old", "new", "allowed"),
    [
        ({"a": "1"}, {"a": "1"}, True),
        ({"a": "1", "reason": "x"}, {"a": "1", "reason": "y"}, True),  # only the exempt key changed
        ({"a": "1"}, {"a": "1", "reason": "y"}, True),  # the exempt key added
        ({"a": "1"}, {"a": "2"}, False),  # another key changed
        ({"a": "1"}, {}, False),  # another key removed
        ({}, {"b": "1"}, False),  # another key added
    ],
)
def test_same_map_except(
    exempt: str | list[str], old: dict[str, str], new: dict[str, str], allowed: bool
) -> None:
    found = _evaluate(
        same_map_except("annotations", exempt),
        object={"metadata": {"annotations": new}},
        oldObject={"metadata": {"annotations": old}},
    )
    assert bool(found) is allowed
