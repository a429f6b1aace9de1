"""Faults on the Prometheus side and inside a pass: each ends in the safe outcome, and a
metric shows it. The servers here are real sockets misbehaving the way a broken proxy or
Prometheus does (trickling, bottomless JSON); the stale-series case uses the real
Prometheus of conftest.py. Node-side faults are in test_faults_controlplane.py.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from trainyard_gate.overflow.controller import GateEvaluator, one_pass
from trainyard_gate.overflow.hysteresis import GateState, OnUnavailable, Thresholds
from trainyard_gate.overflow.metrics import GateMetrics
from trainyard_gate.overflow.policy import Gate, TaintPolicy
from trainyard_gate.runtime.metrics import Liveness
from trainyard_gate.runtime.prometheus import PrometheusClient, QueryFailed
from trainyard_gate.runtime.reader import PrometheusEndpoint, Taint

from tests.support import GATE_DIR, free_port

from .conftest import METRIC, Exporter
from .program import gate_command, write_inputs

TAINT = Taint("trainyard.dev/overflow-gate", "closed", "NoSchedule")
GOOD_BODY = json.dumps(
    {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1, "100"]}]}}
).encode()
DEADLINE = 1.0
BAND = Thresholds(64, 0, 16, 0)  # hold times 0: one usable answer would move the gate
OPEN = {"lambda": GateState.OPEN}


class Misbehaving:
    """A loopback HTTP server answering every request with `respond(conn)`."""

    def __init__(self, respond: str) -> None:
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen()
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._mode = respond
        self._closing = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            conn.recv(65536)
            head = (
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(GOOD_BODY)}\r\n\r\n"
            )
            if self._mode == "trickle-body":  # headers at once, then one byte per 50 ms (~6 s)
                conn.sendall(head.encode())
                self._trickle(conn, GOOD_BODY)
            elif self._mode == "trickle-headers":  # even the status line one byte at a time
                self._trickle(conn, head.encode() + GOOD_BODY)
            elif self._mode == "nested":  # valid-looking JSON nested deeper than any parser recurses
                body = b"[" * 200_000 + b"]" * 200_000
                conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
            elif self._mode == "blackhole":  # accepts, never answers
                self._closing.wait(60)

    def _trickle(self, conn: socket.socket, data: bytes) -> None:
        for index in range(len(data)):
            if self._closing.is_set():
                return
            conn.sendall(data[index : index + 1])
            time.sleep(0.05)

    def close(self) -> None:
        self._closing.set()
        self._listener.close()


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[Misbehaving]:
    served = Misbehaving(request.param)
    yield served
    served.close()
    # At the deadline the client leaves its worker thread behind (runtime/prometheus.py);
    # closing the server ends that worker's read. Wait for it here, so that its last words
    # (urllib3 logging the cut-off headers) land in this test and not in whichever test runs
    # next: test_an_exception_in_a_pass_is_logged_counted_and_survived once caught urllib3's
    # "Failed to parse headers" in its log records under `make test-fast`.
    for worker in [t for t in threading.enumerate() if t.name == "prometheus-query"]:
        worker.join(timeout=10)
        assert not worker.is_alive(), "an abandoned query outlived its server by 10 s"


def policy_for(url: str, mode: OnUnavailable = OnUnavailable.HOLD) -> TaintPolicy:
    gate = Gate("lambda", (("trainyard.dev/provider", "lambda"),), TAINT, BAND)
    return TaintPolicy("overflow-gate", PrometheusEndpoint(url, DEADLINE), METRIC, 1, mode, False, (gate,))


def errors(metrics: GateMetrics, stage: str) -> float:
    return metrics.registry.get_sample_value("trainyard_gate_errors_total", {"stage": stage}) or 0


@pytest.mark.parametrize("server", ["trickle-body", "trickle-headers"], indirect=True)
def test_a_trickled_answer_is_cut_at_the_deadline(server: Misbehaving) -> None:
    # Before: timeoutSeconds bounded each read, and a trickle (a byte per 50 ms here, one
    # per second in the field) held one query for a minute. Now the whole query ends at
    # the deadline, counts as unavailable, and the gate holds.
    policy = policy_for(server.url)
    client = PrometheusClient(policy.prometheus)
    metrics = GateMetrics(["lambda"])
    evaluator = GateEvaluator(policy, lambda: client.query_single(METRIC), metrics, OPEN)
    began = time.monotonic()
    observation = evaluator.observe()
    took = time.monotonic() - began
    assert observation.free_gpus is None and "within 1s" in (observation.error or ""), observation.error
    assert took < DEADLINE + 0.5, f"query took {took:.2f}s with a {DEADLINE}s deadline"
    assert evaluator.state("lambda") is GateState.OPEN  # hold: no value moves nothing
    registry = metrics.registry
    assert registry.get_sample_value("trainyard_gate_query_success") == 0
    assert errors(metrics, "query") == 1


@pytest.mark.parametrize("server", ["nested"], indirect=True)
def test_bottomless_json_is_a_failed_query_not_a_crash(server: Misbehaving) -> None:
    # Before: RecursionError escaped the query and killed the process.
    client = PrometheusClient(PrometheusEndpoint(server.url, 5))
    with pytest.raises(QueryFailed, match="nested too deeply"):
        client.query_single(METRIC)


def test_an_unexpected_exception_in_the_query_is_no_value() -> None:
    def broken() -> float:
        raise RecursionError("maximum recursion depth exceeded")

    metrics = GateMetrics(["lambda"])
    evaluator = GateEvaluator(policy_for("http://127.0.0.1:1"), broken, metrics, {"lambda": GateState.CLOSED})
    observation = evaluator.observe()
    assert observation.free_gpus is None
    assert observation.error == "RecursionError: maximum recursion depth exceeded"
    assert errors(metrics, "query") == 1 and evaluator.state("lambda") is GateState.CLOSED


def test_an_exception_in_a_pass_is_logged_counted_and_survived(caplog: pytest.LogCaptureFixture) -> None:
    # The evaluator knows gate "lambda" only; a policy naming another gate makes the pass
    # raise KeyError inside the loop (any bug would do). The pass reports failure, the
    # error is counted, and the caller goes on to the next pass.
    known = policy_for("http://127.0.0.1:1")
    metrics = GateMetrics(["lambda"])
    evaluator = GateEvaluator(known, lambda: 100.0, metrics, {"lambda": GateState.CLOSED})
    other = Gate("salad", (("trainyard.dev/provider", "salad"),), TAINT, BAND)
    mismatched = TaintPolicy(
        known.name, known.prometheus, known.query, 1, known.on_prometheus_unavailable, False, (other,)
    )
    caplog.set_level(logging.ERROR, logger="trainyard_gate")
    stop = threading.Event()
    for expected in (1, 2):
        assert one_pass(mismatched, evaluator, None, metrics, stop, query=True) is False  # type: ignore[arg-type]
        assert errors(metrics, "pass") == expected
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("trainyard_gate")]
    assert ours == ["reconcile pass failed"] * 2


def test_a_stale_series_holds_the_gate_and_shows_blind(exporter: Exporter, prometheus_url: str) -> None:
    # The exporter stops exporting the series: Prometheus marks it stale at the next scrape,
    # the query has no sample, and under `hold` an open gate stays open; query_success 0
    # and a frozen last-success time are what OverflowGateBlindWhileOpen watches.
    policy = policy_for(prometheus_url)
    client = PrometheusClient(policy.prometheus)
    metrics = GateMetrics(["lambda"])
    evaluator = GateEvaluator(policy, lambda: client.query_single(METRIC), metrics, OPEN)
    exporter.set(40)  # in the band: the gate stays open on a good answer too
    deadline = time.monotonic() + 10
    while evaluator.observe().free_gpus != 40:
        assert time.monotonic() < deadline, "Prometheus never showed 40"
        time.sleep(0.1)
    exporter.set_series([])
    deadline = time.monotonic() + 10
    while (observation := evaluator.observe()).free_gpus is not None:
        assert time.monotonic() < deadline, "the series never went stale"
        time.sleep(0.1)
    registry = metrics.registry
    stamp = "trainyard_gate_last_successful_query_timestamp_seconds"
    last_good = registry.get_sample_value(stamp)
    try:
        for _ in range(5):  # blind for several queries in a row
            time.sleep(0.2)
            assert evaluator.observe().free_gpus is None
        assert "0 series" in (observation.error or ""), observation.error
        assert evaluator.state("lambda") is GateState.OPEN
        assert registry.get_sample_value("trainyard_gate_query_success") == 0
        assert registry.get_sample_value(stamp) == last_good and errors(metrics, "query") >= 6
    finally:
        exporter.set(40)
        client.close()


def test_health_fails_when_beats_stop() -> None:
    now = [0.0]
    liveness = Liveness(30, clock=lambda: now[0])
    assert liveness.check()[0]
    now[0] = 29
    assert liveness.check()[0]
    now[0] = 31
    ok, why = liveness.check()
    assert not ok and why.startswith("loop stalled: last pass 31s ago")
    liveness.beat()
    assert liveness.check()[0]


@pytest.mark.slow  # starts the gate's own server process against a hanging API
@pytest.mark.parametrize("server", ["blackhole"], indirect=True)
def test_healthz_fails_while_the_loop_hangs_and_metrics_still_answer(
    server: Misbehaving, tmp_path: Path
) -> None:
    # The Kubernetes API accepts connections and never answers: every call hangs for the
    # client's 10 s timeout. /metrics (another thread) keeps answering 200, which is why the
    # old liveness probe never restarted a stuck gate; /healthz says 503.
    policy, kubeconfig = write_inputs(tmp_path)
    config = json.loads(kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = server.url
    kubeconfig.write_text(json.dumps(config))
    port = free_port()
    process = subprocess.Popen(
        gate_command(
            policy,
            kubeconfig,
            "--metrics-port",
            str(port),
            "--metrics-address",
            "127.0.0.1",
            "--stall-seconds",
            "2",
        ),
        cwd=GATE_DIR,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        codes: tuple[int, int] = (0, 0)
        while codes != (503, 200):
            assert process.poll() is None and time.monotonic() < deadline, codes
            with contextlib.suppress(requests.RequestException):
                codes = (
                    requests.get(f"{base}/healthz", timeout=1).status_code,
                    requests.get(f"{base}/metrics", timeout=1).status_code,
                )
            time.sleep(0.2)
        assert "loop stalled" in requests.get(f"{base}/healthz", timeout=1).text
    finally:
        process.kill()
        process.wait(timeout=10)
