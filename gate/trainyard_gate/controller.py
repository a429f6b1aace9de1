"""One reconcile pass, split in its two halves so each can be tested against the real thing.

GateEvaluator: query Prometheus once, feed every gate's state machine, record metrics and
log transitions (needs Prometheus, never Kubernetes). TaintEnforcer: make the matching
nodes carry what each gate's state asks for (needs Kubernetes, never Prometheus).
Enforcement runs every pass, not only on transitions: that is what re-taints a node that
was recreated while the gate was closed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from .hysteresis import Decision, GateMemory, GateState, step
from .log import event
from .metrics import GateMetrics
from .nodes import NodeTaints, api_error, carries_gate, is_converged, state_of
from .policy import Gate, Taint, TaintPolicy
from .prometheus import QueryFailed

LOG = logging.getLogger("trainyard_gate")

FreeGpuQuery = Callable[[], float]  # raises QueryFailed when there is no single value
Clock = Callable[[], float]


class NodeGateway(Protocol):
    def list(self, label_selector: str) -> list[NodeTaints]: ...

    def converge(self, node: NodeTaints, taint: Taint, state: GateState) -> bool: ...


@dataclass(frozen=True)
class Observation:
    free_gpus: float | None
    error: str | None  # why free_gpus is None
    decisions: Mapping[str, Decision]  # by gate name


class GateEvaluator:
    """Holds every gate's memory; observe() is one query plus one step per gate."""

    def __init__(
        self,
        policy: TaintPolicy,
        query: FreeGpuQuery,
        metrics: GateMetrics,
        initial: Mapping[str, GateState],
        clock: Clock = time.monotonic,
        wall_clock: Clock = time.time,
    ) -> None:
        self._policy = policy
        self._query = query
        self._metrics = metrics
        self._clock = clock
        self._wall_clock = wall_clock
        self._memory = {gate.name: GateMemory(initial[gate.name]) for gate in policy.gates}
        for gate in policy.gates:
            metrics.record_state(gate.name, initial[gate.name])

    def state(self, gate: str) -> GateState:
        return self._memory[gate].state

    def observe(self) -> Observation:
        free: float | None
        error: str | None = None
        try:
            free = self._query()
        except QueryFailed as err:
            free, error = None, str(err)
            event(LOG, logging.WARNING, "free-GPU query failed", error=error)
        except Exception as err:  # a bug or a surprise in the client: still just no value
            free, error = None, f"{type(err).__name__}: {err}".splitlines()[0]
            event(LOG, logging.ERROR, "free-GPU query failed unexpectedly", error=error)
        now = self._clock()
        self._metrics.record_query(free, self._wall_clock())
        decisions = {}
        for gate in self._policy.gates:
            self._memory[gate.name], decision = step(
                self._memory[gate.name],
                now,
                free,
                gate.thresholds,
                self._policy.on_prometheus_unavailable,
            )
            self._metrics.record_decision(gate.name, decision)
            if decision.changed:
                self._log_transition(gate, decision)
            decisions[gate.name] = decision
        return Observation(free, error, decisions)

    def _log_transition(self, gate: Gate, decision: Decision) -> None:
        limits = gate.thresholds
        event(
            LOG,
            logging.INFO,
            "gate transition",
            gate=gate.name,
            **{"from": decision.previous.value, "to": decision.state.value},
            free_gpus=decision.free_gpus,
            close_when_free_gpus_at_least=limits.close_when_free_gpus_at_least,
            close_after_seconds=limits.close_after_seconds,
            open_when_free_gpus_below=limits.open_when_free_gpus_below,
            open_after_seconds=limits.open_after_seconds,
            held_seconds=round(decision.held_seconds, 3),
            on_prometheus_unavailable=self._policy.on_prometheus_unavailable.value,
            reason=decision.reason,
        )


class TaintEnforcer:
    """Reads start-up state from the nodes and converges them to each gate's state."""

    def __init__(self, nodes: NodeGateway, metrics: GateMetrics, dry_run: bool) -> None:
        self._nodes = nodes
        self._metrics = metrics
        self.dry_run = dry_run
        self._reported: dict[tuple[str, str], GateState] = {}  # last dry-run intent per node

    def initial_states(self, gates: Sequence[Gate]) -> dict[str, GateState]:
        states = {}
        for gate in gates:
            nodes = self._nodes.list(gate.label_selector)
            states[gate.name] = state_of(nodes, gate.taint)
            event(
                LOG,
                logging.INFO,
                "initial state from nodes",
                gate=gate.name,
                state=states[gate.name].value,
                nodes=[node.name for node in nodes],
            )
        return states

    def enforce(self, gate: Gate, state: GateState) -> bool:
        """Converge one gate's nodes; False if the Kubernetes API failed (logged).

        Records what is on the nodes afterwards (trainyard_gate_closed, _matched_nodes):
        a patch that failed, or a dry run, leaves the node as it was, and the metric says so.
        """
        ok = True
        try:
            nodes = self._nodes.list(gate.label_selector)
        except Exception as err:  # the API or the network; retried next pass
            self._api_failure(gate, None, err)
            return False
        if not nodes and self._reported.get((gate.name, "")) is not state:
            # Nothing to guard: say so once per state, the metric and its alert say it on.
            self._reported[(gate.name, "")] = state
            event(LOG, logging.WARNING, "gate selector matches no node", gate=gate.name,
                  selector=gate.label_selector, state=state.value)  # fmt: skip
        open_nodes = 0
        for node in nodes:
            if is_converged(node, gate.taint, state):
                open_nodes += not carries_gate(node.taints, gate.taint)
                continue
            tainted, reached = self._converge(gate, node, state)
            open_nodes += not tainted
            ok = ok and reached
        self._metrics.record_nodes(gate.name, len(nodes), closed=open_nodes == 0)
        return ok

    def _converge(self, gate: Gate, node: NodeTaints, state: GateState) -> tuple[bool, bool]:
        """Bring one node to `state`: (carries the gate taint afterwards, API call succeeded)."""
        before = carries_gate(node.taints, gate.taint)
        action = "taint" if state is GateState.CLOSED else "untaint"
        if self.dry_run:
            # Nothing changes in dry run, so every pass would repeat this: report once.
            if self._reported.get((gate.name, node.name)) is not state:
                self._reported[(gate.name, node.name)] = state
                self._metrics.record_patch(gate.name, state is GateState.CLOSED, True)
                event(
                    LOG,
                    logging.INFO,
                    "node patch skipped (dry run)",
                    gate=gate.name,
                    node=node.name,
                    action=action,
                    state=state.value,
                )
            return before, True
        try:
            patched = self._nodes.converge(node, gate.taint, state)
        except Exception as err:
            self._api_failure(gate, node.name, err)
            return before, False
        if patched:
            self._metrics.record_patch(gate.name, state is GateState.CLOSED, dry_run=False)
            event(
                LOG,
                logging.INFO,
                "node patched",
                gate=gate.name,
                node=node.name,
                action=action,
                state=state.value,
            )
        return state is GateState.CLOSED, True

    def _api_failure(self, gate: Gate, node: str | None, err: Exception) -> None:
        self._metrics.errors.labels(stage="nodes").inc()
        event(
            LOG,
            logging.ERROR,
            "node taint update failed",
            gate=gate.name,
            node=node,
            error=api_error(err),
        )
