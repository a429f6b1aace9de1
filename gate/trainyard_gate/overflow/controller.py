"""The overflow gate: one pass split in its two halves so each can be tested against the
real thing, the loop around them, and `start`, which main calls for a TaintPolicy.

GateEvaluator: query Prometheus once, feed every gate's state machine, record metrics and
log transitions (needs Prometheus, never Kubernetes). TaintEnforcer: make the matching
nodes carry what each gate's state asks for (needs Kubernetes, never Prometheus).
Enforcement runs every pass, not only on transitions: that is what re-taints a node that
was recreated while the gate was closed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..runtime import log, loop
from ..runtime.loop import Clock
from ..runtime.metrics import Liveness
from ..runtime.nodes import NodeGateway, NodePatcher, NodeTaints, Want, carries, is_converged
from ..runtime.program import Controller, Options
from ..runtime.prometheus import PrometheusClient, QueryFailed
from ..runtime.reader import Taint
from .hysteresis import Decision, GateMemory, GateState, step
from .metrics import GateMetrics
from .policy import Gate, TaintPolicy

STARTUP_BACKOFF_MAX_SECONDS = 30.0

FreeGpuQuery = Callable[[], float]  # raises QueryFailed when there is no single value


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
            log.warning("free-GPU query failed", error=error)
        except Exception as err:  # a bug or a surprise in the client: still just no value
            free, error = None, f"{type(err).__name__}: {err}".splitlines()[0]
            log.error("free-GPU query failed unexpectedly", error=error)
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
        log.info(
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
        self._patcher = NodePatcher(nodes, dry_run)
        self._warned: dict[str, GateState] = {}  # gate -> state when "matches no node" was said

    @property
    def dry_run(self) -> bool:
        return self._patcher.dry_run

    def initial_states(self, gates: Sequence[Gate]) -> dict[str, GateState]:
        states = {}
        for gate in gates:
            nodes = self._nodes.list(gate.label_selector)
            states[gate.name] = state_of(nodes, gate.taint)
            log.info(
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
        if not nodes and self._warned.get(gate.name) is not state:
            # Nothing to guard: say so once per state, the metric and its alert say it on.
            self._warned[gate.name] = state
            log.warning(
                "gate selector matches no node",
                gate=gate.name,
                selector=gate.label_selector,
                state=state.value,
            )
        open_nodes = 0
        for node in nodes:
            if is_converged(node, gate.taint, state is GateState.CLOSED):
                open_nodes += not carries(node.taints, gate.taint)
                continue
            tainted, reached = self._converge(gate, node, state)
            open_nodes += not tainted
            ok = ok and reached
        self._metrics.record_nodes(gate.name, len(nodes), closed=open_nodes == 0)
        return ok

    def _converge(self, gate: Gate, node: NodeTaints, state: GateState) -> tuple[bool, bool]:
        """Bring one node to `state`: (carries the gate taint afterwards, API call succeeded)."""
        before = carries(node.taints, gate.taint)
        closed = state is GateState.CLOSED

        def count(dry_run: bool) -> None:
            self._metrics.record_patch(gate.name, closed, dry_run)

        action = "taint" if closed else "untaint"
        failed = self._patcher.apply(
            node, Want(gate.taint, present=closed), action, count, {"gate": gate.name}, {"state": state.value}
        )
        if failed is not None:
            self._api_failure(gate, node.name, failed)
            return before, False
        return (before if self.dry_run else closed), True

    def _api_failure(self, gate: Gate, node: str | None, err: Exception) -> None:
        self._metrics.api_failed("node taint update failed", err, gate=gate.name, node=node)


def state_of(nodes: Sequence[NodeTaints], taint: Taint) -> GateState:
    """Start-up state, failing safe: open only when at least one node matches and none
    carries the gate's key and effect. A node recreated while the gate was down carries
    the taint from creation (the rendered MutatingAdmissionPolicy adds it), a restart in
    the middle of a transition leaves some node tainted, and a wrong value still counts
    as closed: all of these start closed, and opening again must be earned."""
    if nodes and not any(carries(node.taints, taint) for node in nodes):
        return GateState.OPEN
    return GateState.CLOSED


def run(
    policy: TaintPolicy,
    prometheus: PrometheusClient,
    enforcer: TaintEnforcer,
    metrics: GateMetrics,
    stop: threading.Event,
    *,
    once: bool,
    node_resync_seconds: float,
    clock: Clock = time.monotonic,
    liveness: Liveness | None = None,
) -> int:
    """The gate's reconcile loop (runtime.loop.run); returns the process exit code."""
    beat = liveness.beat if liveness is not None else (lambda: None)
    initial = initial_states(policy, enforcer, metrics, stop, once=once, beat=beat)
    if initial is None:
        return 1 if once else 0
    evaluator = GateEvaluator(
        policy, lambda: prometheus.query_single(policy.query), metrics, initial, clock=clock
    )
    return loop.run(
        lambda query: one_pass(policy, evaluator, enforcer, metrics, stop, query),
        policy.reconcile_interval_seconds,
        stop,
        once=once,
        resync_seconds=node_resync_seconds,
        clock=clock,
        beat=beat,
    )


def one_pass(
    policy: TaintPolicy,
    evaluator: GateEvaluator,
    enforcer: TaintEnforcer,
    metrics: GateMetrics,
    stop: threading.Event,
    query: bool,
) -> bool:
    """Query (when due) and enforce every gate; True if everything succeeded. Never raises
    (runtime.loop.guarded)."""

    def work() -> bool:
        ok = evaluator.observe().error is None if query else True
        for gate in policy.gates:
            if stop.is_set():  # the Lease is gone or SIGTERM: touch nothing more
                return ok
            ok = enforcer.enforce(gate, evaluator.state(gate.name)) and ok
        return ok

    return loop.guarded(work, metrics.errors)


def initial_states(
    policy: TaintPolicy,
    enforcer: TaintEnforcer,
    metrics: GateMetrics,
    stop: threading.Event,
    *,
    once: bool,
    beat: Callable[[], None] = lambda: None,
) -> dict[str, GateState] | None:
    """Gate states read from the nodes, retried with backoff; None if stopped first."""
    backoff = 1.0
    while not stop.is_set():
        try:
            return enforcer.initial_states(policy.gates)
        except Exception as err:  # API down at start-up: keep trying, stay killable
            metrics.api_failed("cannot read nodes for the initial state", err, retry_seconds=backoff)
            beat()  # retrying is progress; a hung call is not
            if once:
                return None
            stop.wait(backoff)
            backoff = min(backoff * 2, STARTUP_BACKOFF_MAX_SECONDS)
    return None


def start(policy: TaintPolicy, options: Options) -> Controller:
    """The gate's controller for main: its metrics, what the "starting" line names, its loop."""
    metrics = GateMetrics(gate.name for gate in policy.gates)
    enforcer = TaintEnforcer(options.nodes, metrics, dry_run=options.dry_run)

    def work(halt: threading.Event) -> int:
        return run(
            policy,
            options.prometheus,
            enforcer,
            metrics,
            halt,
            once=options.once,
            node_resync_seconds=options.node_resync_seconds,
            liveness=options.liveness,
        )

    return Controller(metrics, {"gates": [gate.name for gate in policy.gates]}, work)
