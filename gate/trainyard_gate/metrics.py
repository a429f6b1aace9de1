"""The controller's own /metrics and /healthz, on a private registry (no global state)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, make_wsgi_app

from .hysteresis import Decision, GateState

PREFIX = "trainyard_gate"
STAGES = ("query", "nodes", "pass", "election")
DIRECTIONS = ("open", "close")
HEALTH_PREFIX = "trainyard_health"
HEALTH_ACTIONS = ("quarantine", "release", "rewrite")


class GateMetrics:
    """Every series the controller exports; label sets exist from start-up at 0."""

    def __init__(self, gates: Iterable[str], registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        reg = self.registry
        self.closed = Gauge(
            f"{PREFIX}_closed",
            "1 when no matching node lacks the gate taint (key and effect), as last read "
            "from the nodes; 0 when some node is open to spilled pods",
            ["gate"],
            registry=reg,
        )
        self.desired_closed = Gauge(
            f"{PREFIX}_desired_closed",
            "1 while the gate's state machine is closed, 0 while open (what it asks the nodes for)",
            ["gate"],
            registry=reg,
        )
        self.matched_nodes = Gauge(
            f"{PREFIX}_matched_nodes",
            "Nodes the gate's selector matched at the last read (0: the gate guards nothing)",
            ["gate"],
            registry=reg,
        )
        self.leader = Gauge(
            f"{PREFIX}_leader",
            "1 while this process holds the Lease and acts, 0 while it stands by",
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
            "Failures by stage: query (Prometheus), nodes (Kubernetes API), pass (anything "
            "else in one reconcile pass, logged and survived), election (the Lease)",
            ["stage"],
            registry=reg,
        )
        self.free_gpus.set(float("nan"))
        for stage in STAGES:
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

    def serve(self, port: int, address: str, health: Health) -> tuple[WSGIServer, threading.Thread]:
        return serve(self.registry, port, address, health)


def serve(registry: CollectorRegistry, port: int, address: str,
          health: Health) -> tuple[WSGIServer, threading.Thread]:  # fmt: skip
    """Serve /metrics and /healthz from a daemon thread; stop with server.shutdown()."""
    metrics_app = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/healthz":
            ok, why = health.check()
            start_response("200 OK" if ok else "503 Service Unavailable",
                           [("Content-Type", "text/plain; charset=utf-8")])  # fmt: skip
            return [f"{why}\n".encode()]
        return metrics_app(environ, start_response)  # type: ignore[no-any-return]

    server = make_server(address, port, app, _ThreadingServer, _QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


class HealthMetrics:
    """The NodeHealthPolicy controller's series (names fixed by the health contract)."""

    def __init__(self, pools: Iterable[str], reasons: Iterable[str],
                 registry: CollectorRegistry | None = None) -> None:  # fmt: skip
        self.registry = registry or CollectorRegistry()
        reg, p = self.registry, HEALTH_PREFIX
        node_labels = ["node", "pool", "reason"]
        self.quarantined = Gauge(f"{p}_quarantined", "1 per node the controller holds quarantined "
                                 "(reason: the taint value)", node_labels, registry=reg)  # fmt: skip
        self.quarantined_since = Gauge(f"{p}_quarantined_since_seconds", "Unix time the node was "
                                       "quarantined", node_labels, registry=reg)  # fmt: skip
        self.held_back = Gauge(f"{p}_held_back", "Nodes that qualify for quarantine now but the "
                               "cap refused", ["pool"], registry=reg)  # fmt: skip
        self.cap = Gauge(f"{p}_cap", "The pool's cap in nodes now: floor(maxPercentOfPool x "
                         "pool nodes / 100)", ["pool"], registry=reg)  # fmt: skip
        self.cap_fleet = Gauge(f"{p}_cap_fleet", "maxNodes: quarantined nodes allowed in all pools",
                               registry=reg)  # fmt: skip
        self.pool_nodes = Gauge(f"{p}_pool_nodes", "Nodes the pool's selector matched at the last read",
                                ["pool"], registry=reg)  # fmt: skip
        self.bad_nodes = Gauge(f"{p}_bad_nodes", "Pool nodes the last successful query of the "
                               "condition returned", ["reason"], registry=reg)  # fmt: skip
        self.query_success = Gauge(f"{p}_query_success", "1 if every condition query of the last "
                                   "pass succeeded, else 0", registry=reg)  # fmt: skip
        self.last_success = Gauge(f"{p}_last_success_timestamp_seconds", "Unix time of the last "
                                  "pass whose queries all succeeded", registry=reg)  # fmt: skip
        self.node_patches = Counter(f"{p}_node_patches", "Node changes made (or, in dry run, that would "
                                    "have been made)", ["action"], registry=reg)  # fmt: skip
        self.errors = Counter(f"{p}_errors", "Failures by stage: query (Prometheus), nodes (Kubernetes "
                              "API), pass (anything else, survived), election (the Lease)", ["stage"],
                              registry=reg)  # fmt: skip
        self.leader = Gauge(f"{p}_leader", "1 while this process holds the Lease and acts, 0 while it "
                            "stands by", registry=reg)  # fmt: skip
        for stage in STAGES:
            self.errors.labels(stage=stage)
        for action in HEALTH_ACTIONS:
            self.node_patches.labels(action=action)
        for pool in pools:
            self.held_back.labels(pool=pool)
        for reason in reasons:
            self.bad_nodes.labels(reason=reason)

    def serve(self, port: int, address: str, health: Health) -> tuple[WSGIServer, threading.Thread]:
        return serve(self.registry, port, address, health)


class Health:
    """Liveness: fails when the work loop has stopped advancing.

    /metrics is served by another thread and keeps answering when the loop is stuck (a
    hung API call, a deadlock), so probing it proved nothing. The loop (or, while this
    process stands by, the leader election loop) calls beat(); /healthz answers 503 once
    no beat came for `max_age_seconds`.
    """

    def __init__(self, max_age_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age_seconds = max_age_seconds
        self._clock = clock
        self._last = clock()
        self._lock = threading.Lock()

    def beat(self) -> None:
        with self._lock:
            self._last = self._clock()

    def check(self) -> tuple[bool, str]:
        with self._lock:
            age = self._clock() - self._last
        if age > self.max_age_seconds:
            return False, f"loop stalled: last pass {age:.0f}s ago (limit {self.max_age_seconds:.0f}s)"
        return True, f"ok: last pass {age:.1f}s ago"


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a slow scraper must not hold up shutdown


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # probes every few seconds would drown the JSON log
