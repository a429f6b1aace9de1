"""The controller's query path and hysteresis against a REAL Prometheus.

Prometheus (the pinned build) scrapes a tiny exporter the test controls every second; the
test moves the exported free-GPU value across the thresholds and watches the decisions.
Hold times are a second or less so the whole module runs in a few seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from trainyard_gate.overflow.controller import GateEvaluator, Observation
from trainyard_gate.overflow.hysteresis import GateState, OnUnavailable, Thresholds
from trainyard_gate.overflow.metrics import GateMetrics
from trainyard_gate.overflow.policy import Gate, TaintPolicy
from trainyard_gate.runtime.prometheus import PrometheusClient, QueryFailed, single_value
from trainyard_gate.runtime.reader import PrometheusEndpoint, Taint

from tests.support import free_port

from ..conftest import METRIC, Exporter

TAINT = Taint("trainyard.dev/overflow-gate", "closed", "NoSchedule")
LABELS = (("trainyard.dev/provider", "lambda"), ("type", "virtual-kubelet"))


def make_policy(url: str, thresholds: Thresholds, mode: OnUnavailable) -> TaintPolicy:
    return TaintPolicy(
        name="overflow-gate",
        prometheus=PrometheusEndpoint(url, timeout_seconds=2),
        query=METRIC,
        reconcile_interval_seconds=0.1,
        on_prometheus_unavailable=mode,
        dry_run=False,
        gates=(Gate("lambda", LABELS, TAINT, thresholds),),
    )


def make_evaluator(
    policy: TaintPolicy, start: GateState
) -> tuple[GateEvaluator, GateMetrics, PrometheusClient]:
    client = PrometheusClient(policy.prometheus)
    metrics = GateMetrics(["lambda"])
    evaluator = GateEvaluator(policy, lambda: client.query_single(policy.query), metrics, {"lambda": start})
    return evaluator, metrics, client


def wait_for(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def prometheus_shows(client: PrometheusClient, expected: float | str) -> Callable[[], bool]:
    """Until Prometheus has scraped the new value (or, for a str, fails with that text)."""

    def check() -> bool:
        try:
            return client.query_single(METRIC) == expected
        except QueryFailed as err:
            return isinstance(expected, str) and expected in str(err)

    return check


def observe_until(
    evaluator: GateEvaluator, state: GateState, timeout: float
) -> tuple[list[Observation], float]:
    """Observe every 0.1 s until the gate is in `state`; the observations and the time taken."""
    seen: list[Observation] = []
    start = time.monotonic()
    while evaluator.state("lambda") is not state:
        if time.monotonic() - start > timeout:
            pytest.fail(f"gate did not become {state.value} within {timeout}s: {seen[-3:]}")
        seen.append(evaluator.observe())
        time.sleep(0.1)
    return seen, time.monotonic() - start


def test_gate_follows_the_exported_value_across_thresholds(exporter: Exporter, prometheus_url: str) -> None:
    band = Thresholds(64, close_after_seconds=0.8, open_when_free_gpus_below=16, open_after_seconds=0.4)
    evaluator, metrics, client = make_evaluator(
        make_policy(prometheus_url, band, OnUnavailable.HOLD), GateState.OPEN
    )
    # Plenty free: closes, but only once >= 64 has been seen for 0.8 s.
    exporter.set(100)
    wait_for(prometheus_shows(client, 100), "Prometheus to scrape 100")
    seen, took = observe_until(evaluator, GateState.CLOSED, timeout=5)
    last = seen[-1].decisions["lambda"]
    assert last.changed and last.free_gpus == 100 and last.held_seconds >= 0.8
    assert took >= 0.8 and len(seen) >= 5  # many observations at 100 before it moved
    assert not any(o.decisions["lambda"].changed for o in seen[:-1])

    # Inside the band (16 <= 40 < 64): stays closed, longer than either hold time.
    exporter.set(40)
    wait_for(prometheus_shows(client, 40), "Prometheus to scrape 40")
    for _ in range(10):
        assert evaluator.observe().decisions["lambda"].state is GateState.CLOSED
        time.sleep(0.1)

    # Training took the GPUs: opens after 0.4 s below 16.
    exporter.set(8)
    wait_for(prometheus_shows(client, 8), "Prometheus to scrape 8")
    seen, took = observe_until(evaluator, GateState.OPEN, timeout=5)
    last = seen[-1].decisions["lambda"]
    assert last.free_gpus == 8 and last.held_seconds >= 0.4 and took >= 0.4

    registry = metrics.registry
    assert registry.get_sample_value("trainyard_gate_desired_closed", {"gate": "lambda"}) == 0
    for direction in ("open", "close"):
        labels = {"gate": "lambda", "direction": direction}
        assert registry.get_sample_value("trainyard_gate_transitions_total", labels) == 1
    assert registry.get_sample_value("trainyard_gate_query_success") == 1
    assert registry.get_sample_value("trainyard_gate_free_gpus") == 8
    stamp = registry.get_sample_value("trainyard_gate_last_successful_query_timestamp_seconds")
    assert stamp is not None and abs(stamp - time.time()) < 5
    client.close()


def test_no_series_counts_as_unavailable_and_close_mode_closes(
    exporter: Exporter, prometheus_url: str
) -> None:
    band = Thresholds(64, close_after_seconds=0.5, open_when_free_gpus_below=16, open_after_seconds=0.5)
    evaluator, metrics, client = make_evaluator(
        make_policy(prometheus_url, band, OnUnavailable.CLOSE), GateState.OPEN
    )
    exporter.set(30)
    wait_for(prometheus_shows(client, 30), "Prometheus to scrape 30")
    exporter.set_series([])  # the target stops exposing it: Prometheus marks it stale
    wait_for(prometheus_shows(client, "0 series"), "the series to go stale")
    seen, took = observe_until(evaluator, GateState.CLOSED, timeout=5)
    assert all(o.free_gpus is None and "0 series" in (o.error or "") for o in seen)
    assert seen[-1].decisions["lambda"].held_seconds >= 0.5 and took >= 0.5
    assert metrics.registry.get_sample_value("trainyard_gate_query_success") == 0
    client.close()


def test_several_series_are_ambiguous_and_hold_keeps_state(exporter: Exporter, prometheus_url: str) -> None:
    band = Thresholds(64, close_after_seconds=0, open_when_free_gpus_below=16, open_after_seconds=0)
    evaluator, _, client = make_evaluator(
        make_policy(prometheus_url, band, OnUnavailable.HOLD), GateState.CLOSED
    )
    # Both values would open the gate at once (hold times 0) if either were believed.
    exporter.set_series([('pool="a"', 1), ('pool="b"', 2)])
    wait_for(prometheus_shows(client, "2 series"), "two series in Prometheus")
    for _ in range(5):
        observation = evaluator.observe()
        assert observation.free_gpus is None and "2 series" in (observation.error or "")
        assert evaluator.state("lambda") is GateState.CLOSED
    # A scalar query is one sample too.
    assert client.query_single(f"scalar(sum({METRIC}))") == 3
    client.close()


def test_unreachable_prometheus_and_open_mode(prometheus_url: str) -> None:
    band = Thresholds(64, close_after_seconds=0.5, open_when_free_gpus_below=16, open_after_seconds=0.3)
    dead = f"http://127.0.0.1:{free_port()}"
    evaluator, metrics, client = make_evaluator(make_policy(dead, band, OnUnavailable.OPEN), GateState.CLOSED)
    seen, took = observe_until(evaluator, GateState.OPEN, timeout=5)
    assert all("cannot reach" in (o.error or "") for o in seen)
    assert took >= 0.3
    assert metrics.registry.get_sample_value("trainyard_gate_errors_total", {"stage": "query"})
    client.close()

    live = PrometheusClient(PrometheusEndpoint(prometheus_url, 2))
    with pytest.raises(QueryFailed, match=r"HTTP 400 .*parse error"):
        live.query_single("sum(")  # a PromQL error is reported with Prometheus' words
    with pytest.raises(QueryFailed, match=r"a matrix"):
        live.query_single(f"{METRIC}[5m]")
    live.close()


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"status": "success", "data": {"resultType": "scalar", "result": [1, "NaN"]}}, "not finite"),
        (
            {
                "status": "success",
                "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1, "+Inf"]}]},
            },
            "not finite",
        ),
        (
            {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1]}]}},
            "malformed sample",
        ),
        ({"status": "error", "errorType": "timeout", "error": "query timed out"}, "timed out"),
        ({"status": "success"}, "no data"),
        ([1, 2], "query failed"),
    ],
)
def test_response_shapes_that_are_not_one_usable_sample(payload: object, message: str) -> None:
    with pytest.raises(QueryFailed, match=message):
        single_value(payload)


def test_one_element_vector_value() -> None:
    payload = {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1.5, "42"]}]},
    }
    assert single_value(payload) == 42
