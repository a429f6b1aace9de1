"""The overflow gate's series (trainyard_gate_*: the rendered alerts and dashboards read
these names); label sets exist from start-up at 0."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry

from ..runtime.metrics import ControllerMetrics
from .hysteresis import Decision, GateState

PREFIX = "trainyard_gate"
DIRECTIONS = ("open", "close")


class GateMetrics(ControllerMetrics):
    def __init__(self, gates: Iterable[str], registry: CollectorRegistry | None = None) -> None:
        super().__init__(
            PREFIX,
            "Failures by stage: query (Prometheus), nodes (Kubernetes API), pass (anything "
            "else in one reconcile pass, logged and survived), election (the Lease)",
            registry,
        )
        self.closed = self.gauge(
            "closed",
            "1 when no matching node lacks the gate taint (key and effect), as last read "
            "from the nodes; 0 when some node is open to spilled pods",
            ["gate"],
        )
        self.desired_closed = self.gauge(
            "desired_closed",
            "1 while the gate's state machine is closed, 0 while open (what it asks the nodes for)",
            ["gate"],
        )
        self.matched_nodes = self.gauge(
            "matched_nodes",
            "Nodes the gate's selector matched at the last read (0: the gate guards nothing)",
            ["gate"],
        )
        self.transitions = self.counter(
            "transitions",
            "Gate state changes, by direction (open: taint removed, close: taint added)",
            ["gate", "direction"],
        )
        self.query_success = self.gauge(
            "query_success", "1 if the last free-GPU query gave exactly one finite sample, else 0"
        )
        self.last_success = self.gauge(
            "last_successful_query_timestamp_seconds", "Unix time of the last successful free-GPU query"
        )
        self.free_gpus = self.gauge(
            "free_gpus", "Free in-cluster GPUs at the last successful query (NaN before the first)"
        )
        self.node_patches = self.counter(
            "node_patches",
            "Node taint changes made (or, with dry_run=true, that would have been made)",
            ["gate", "action", "dry_run"],
        )
        self.free_gpus.set(float("nan"))
        for gate in gates:
            for direction in DIRECTIONS:
                self.transitions.labels(gate=gate, direction=direction)

    def record_query(self, free_gpus: float | None, wall_time: float) -> None:
        if free_gpus is None:
            self.query_success.set(0)
            self.errors.labels(stage="query").inc()
            return
        self.query_success.set(1)
        self.last_success.set(wall_time)
        self.free_gpus.set(free_gpus)

    def record_state(self, gate: str, state: GateState) -> None:
        self.desired_closed.labels(gate=gate).set(1 if state is GateState.CLOSED else 0)

    def record_nodes(self, gate: str, matched: int, closed: bool) -> None:
        """What is on the nodes after a pass, not what the state machine wants."""
        self.matched_nodes.labels(gate=gate).set(matched)
        self.closed.labels(gate=gate).set(1 if closed else 0)

    def record_decision(self, gate: str, decision: Decision) -> None:
        self.record_state(gate, decision.state)
        if decision.changed:
            direction = "close" if decision.state is GateState.CLOSED else "open"
            self.transitions.labels(gate=gate, direction=direction).inc()

    def record_patch(self, gate: str, closed: bool, dry_run: bool) -> None:
        action = "taint" if closed else "untaint"
        self.node_patches.labels(gate=gate, action=action, dry_run=str(dry_run).lower()).inc()
