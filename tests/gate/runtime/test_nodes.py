"""The taint list arithmetic behind every node patch, either kind's (pure: no API involved).
`present` True is the gate closed or a node quarantined."""

from __future__ import annotations

from trainyard_gate.runtime.nodes import desired_taints, is_converged
from trainyard_gate.runtime.reader import Taint

from ..node_views import GATE, OURS, PROVIDER, UNREACHABLE, node


def test_closing_appends_the_gate_taint_and_keeps_others_verbatim() -> None:
    result = desired_taints([PROVIDER, UNREACHABLE], GATE, True)
    assert result == [PROVIDER, UNREACHABLE, OURS]


def test_opening_removes_only_the_gate_taint() -> None:
    result = desired_taints([PROVIDER, OURS, UNREACHABLE], GATE, False)
    assert result == [PROVIDER, UNREACHABLE]


def test_same_key_with_another_effect_is_not_ours() -> None:
    foreign = {"key": GATE.key, "effect": "PreferNoSchedule"}
    assert desired_taints([foreign], GATE, False) == [foreign]
    assert is_converged(node(foreign), GATE, False)


def test_a_stale_value_is_replaced_not_duplicated() -> None:
    stale = {"key": GATE.key, "value": "old", "effect": "NoSchedule"}
    assert not is_converged(node(PROVIDER, stale), GATE, True)
    assert desired_taints([PROVIDER, stale], GATE, True) == [PROVIDER, OURS]


def test_valueless_gate_taint_has_no_value_field() -> None:
    bare = Taint(GATE.key, "", "NoSchedule")
    assert desired_taints([], bare, True) == [{"key": GATE.key, "effect": "NoSchedule"}]
    assert is_converged(node({"key": GATE.key, "effect": "NoSchedule"}), bare, True)


def test_convergence_checks() -> None:
    assert is_converged(node(PROVIDER, OURS), GATE, True)
    assert not is_converged(node(PROVIDER), GATE, True)  # e.g. a recreated node
    assert not is_converged(node(OURS), GATE, False)
    assert is_converged(node(), GATE, False)


def test_a_wrong_value_is_not_converged() -> None:
    other_value = {**OURS, "value": "maintenance"}
    assert not is_converged(node(other_value), GATE, True)  # rewritten to ours
