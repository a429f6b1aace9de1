"""The controller's own /metrics, on a private registry (no process-global state)."""

from __future__ import annotations

from collections.abc import Iterable
from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from .hysteresis import Decision, GateState

PREFIX = "trainyard_gate"
DIRECTIONS = ("open", "close")
ACTIONS = ("taint", "untaint")


class GateMetrics:
    """Every series the controller exports; label sets exist from start-up at 0."""

    def __init__(self, gates: Iterable[str], registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        reg = self.registry
        self.closed = Gauge(
            f"{PREFIX}_closed",
            "1 while the gate is closed (taint on the provider's nodes), 0 while open",
            ["gate"],
            registry=reg,
        )
        self.transitions = Counter(
            f"{PREFIX}_transitions",
            "Gate state changes, by direction (open: taint removed, close: taint added)",
            ["gate", "direction"],
            registry=reg,
        )
        self.query_success = Gauge(
            f"{PREFIX}_query_success",
            "1 if the last free-GPU query gave exactly one finite sample, else 0",
            registry=reg,
        )
        self.last_success = Gauge(
            f"{PREFIX}_last_successful_query_timestamp_seconds",
            "Unix time of the last successful free-GPU query",
            registry=reg,
        )
        self.free_gpus = Gauge(
            f"{PREFIX}_free_gpus",
            "Free in-cluster GPUs at the last successful query (NaN before the first)",
            registry=reg,
        )
        self.node_patches = Counter(
            f"{PREFIX}_node_patches",
            "Node taint changes made (or, with dry_run=true, that would have been made)",
            ["gate", "action", "dry_run"],
            registry=reg,
        )
        self.errors = Counter(
            f"{PREFIX}_errors",
            "Failures by stage: query (Prometheus) or nodes (Kubernetes API)",
            ["stage"],
            registry=reg,
        )
        self.free_gpus.set(float("nan"))
        for stage in ("query", "nodes"):
            self.errors.labels(stage=stage)
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
        self.closed.labels(gate=gate).set(1 if state is GateState.CLOSED else 0)

    def record_decision(self, gate: str, decision: Decision) -> None:
        self.record_state(gate, decision.state)
        if decision.changed:
            direction = "close" if decision.state is GateState.CLOSED else "open"
            self.transitions.labels(gate=gate, direction=direction).inc()

    def record_patch(self, gate: str, closed: bool, dry_run: bool) -> None:
        action = "taint" if closed else "untaint"
        self.node_patches.labels(gate=gate, action=action, dry_run=str(dry_run).lower()).inc()

    def serve(self, port: int, address: str) -> tuple[WSGIServer, Thread]:
        """Serve /metrics from a daemon thread; shut down with server.shutdown()."""
        return start_http_server(port, addr=address, registry=self.registry)
