"""The taint list arithmetic behind every node patch (pure: no API involved)."""

from __future__ import annotations

from trainyard_gate.hysteresis import GateState
from trainyard_gate.nodes import NodeTaints, desired_taints, is_converged, state_of
from trainyard_gate.policy import Taint

GATE = Taint("trainyard.dev/overflow-gate", "closed", "NoSchedule")
PROVIDER = {"key": "virtual-kubelet.io/provider", "value": "lambda", "effect": "NoSchedule"}
UNREACHABLE = {
    "key": "node.kubernetes.io/unreachable",
    "effect": "NoExecute",
    "timeAdded": "2026-01-02T03:04:05+00:00",
}
OURS = {"key": GATE.key, "value": "closed", "effect": "NoSchedule"}


def node(*taints: dict[str, str]) -> NodeTaints:
    return NodeTaints("vk-lambda-0", "42", tuple(taints))


def test_closing_appends_the_gate_taint_and_keeps_others_verbatim() -> None:
    result = desired_taints([PROVIDER, UNREACHABLE], GATE, GateState.CLOSED)
    assert result == [PROVIDER, UNREACHABLE, OURS]


def test_opening_removes_only_the_gate_taint() -> None:
    result = desired_taints([PROVIDER, OURS, UNREACHABLE], GATE, GateState.OPEN)
    assert result == [PROVIDER, UNREACHABLE]


def test_same_key_with_another_effect_is_not_ours() -> None:
    foreign = {"key": GATE.key, "effect": "PreferNoSchedule"}
    assert desired_taints([foreign], GATE, GateState.OPEN) == [foreign]
    assert is_converged(node(foreign), GATE, GateState.OPEN)


def test_a_stale_value_is_replaced_not_duplicated() -> None:
    stale = {"key": GATE.key, "value": "old", "effect": "NoSchedule"}
    assert not is_converged(node(PROVIDER, stale), GATE, GateState.CLOSED)
    assert desired_taints([PROVIDER, stale], GATE, GateState.CLOSED) == [PROVIDER, OURS]


def test_valueless_gate_taint_has_no_value_field() -> None:
    bare = Taint(GATE.key, "", "NoSchedule")
    assert desired_taints([], bare, GateState.CLOSED) == [{"key": GATE.key, "effect": "NoSchedule"}]
    assert is_converged(node({"key": GATE.key, "effect": "NoSchedule"}), bare, GateState.CLOSED)


def test_convergence_checks() -> None:
    assert is_converged(node(PROVIDER, OURS), GATE, GateState.CLOSED)
    assert not is_converged(node(PROVIDER), GATE, GateState.CLOSED)  # e.g. a recreated node
    assert not is_converged(node(OURS), GATE, GateState.OPEN)
    assert is_converged(node(), GATE, GateState.OPEN)


def test_start_up_state_is_open_only_when_no_node_carries_the_gate() -> None:
    # Fail safe: any node with the gate's key and effect, or no node at all, is closed.
    assert state_of([node(OURS), node(PROVIDER, OURS)], GATE) is GateState.CLOSED
    assert state_of([node(OURS), node(PROVIDER)], GATE) is GateState.CLOSED  # mid-transition
    assert state_of([node(PROVIDER), node()], GATE) is GateState.OPEN
    assert state_of([], GATE) is GateState.CLOSED  # no nodes yet: the safe, cheap default


def test_a_wrong_value_still_reads_as_closed() -> None:
    # Someone changed the value: the scheduler still keeps inference off, so it is closed.
    other_value = {**OURS, "value": "maintenance"}
    assert state_of([node(PROVIDER, other_value)], GATE) is GateState.CLOSED
    assert not is_converged(node(other_value), GATE, GateState.CLOSED)  # rewritten to ours
    assert state_of([node({**OURS, "effect": "PreferNoSchedule"})], GATE) is GateState.OPEN
