"""What every controller of the program exports, on a private registry (no global state):
the Lease gauge and the failures by stage (`ControllerMetrics`, which each kind's metrics
extend with its own series), /metrics and /healthz (`serve`), and liveness (`Liveness`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, make_wsgi_app

from . import log
from .nodes import api_error

STAGES = ("query", "nodes", "pass", "election")


class ControllerMetrics:
    """`{prefix}_leader` and `{prefix}_errors_total{stage}`, every stage at 0 from start-up."""

    def __init__(self, prefix: str, errors_help: str, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.prefix = prefix
        self.leader = self.gauge(
            "leader", "1 while this process holds the Lease and acts, 0 while it stands by"
        )
        self.errors = self.counter("errors", errors_help, ["stage"])
        for stage in STAGES:
            self.errors.labels(stage=stage)

    def api_failed(self, message: str, err: BaseException, **fields: Any) -> None:
        """A Kubernetes API call failed (retried next pass): counted under stage `nodes` and
        logged as `message` with the API server's own words (`api_error`)."""
        self.errors.labels(stage="nodes").inc()
        log.error(message, **fields, error=api_error(err))

    def gauge(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Gauge:
        """`{prefix}_{name}` on this controller's registry."""
        return Gauge(f"{self.prefix}_{name}", documentation, labels, registry=self.registry)

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Counter:
        """`{prefix}_{name}_total` on this controller's registry."""
        return Counter(f"{self.prefix}_{name}", documentation, labels, registry=self.registry)

    def serve(self, port: int, address: str, liveness: Liveness) -> tuple[WSGIServer, threading.Thread]:
        return serve(self.registry, port, address, liveness)


def serve(
    registry: CollectorRegistry, port: int, address: str, liveness: Liveness
) -> tuple[WSGIServer, threading.Thread]:
    """Serve /metrics and /healthz from a daemon thread; stop with server.shutdown()."""
    metrics_app = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/healthz":
            ok, why = liveness.check()
            start_response(
                "200 OK" if ok else "503 Service Unavailable", [("Content-Type", "text/plain; charset=utf-8")]
            )
            return [f"{why}\n".encode()]
        return metrics_app(environ, start_response)  # type: ignore[no-any-return]

    server = make_server(address, port, app, _ThreadingServer, _QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


class Liveness:
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
