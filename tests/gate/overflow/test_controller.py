"""GateEvaluator with a controllable clock: per-gate independence (staggered thresholds),
the transition log line, and the controller's own metrics."""

from __future__ import annotations

import json
import logging
import math

import pytest
from trainyard_gate.overflow.controller import GateEvaluator, state_of
from trainyard_gate.overflow.hysteresis import GateState, OnUnavailable, Thresholds
from trainyard_gate.overflow.metrics import GateMetrics
from trainyard_gate.overflow.policy import Gate, TaintPolicy
from trainyard_gate.runtime.log import JsonFormatter
from trainyard_gate.runtime.prometheus import QueryFailed
from trainyard_gate.runtime.reader import PrometheusEndpoint, Taint

from ..node_views import GATE, OURS, PROVIDER, node

TAINT = Taint("trainyard.dev/overflow-gate", "closed", "NoSchedule")


def policy(mode: OnUnavailable = OnUnavailable.HOLD) -> TaintPolicy:
    def gate(name: str, open_below: int, open_after: float) -> Gate:
        labels = (("trainyard.dev/provider", name), ("type", "virtual-kubelet"))
        return Gate(name, labels, TAINT, Thresholds(64, 600, open_below, open_after))

    return TaintPolicy(
        name="overflow-gate",
        prometheus=PrometheusEndpoint("http://127.0.0.1:9", 1),
        query="free",
        reconcile_interval_seconds=30,
        on_prometheus_unavailable=mode,
        dry_run=False,
        # Preferred provider first; the next one opens only when even fewer GPUs are free.
        gates=(gate("lambda", 16, 60), gate("salad", 8, 60)),
    )


class Feed:
    """The free-GPU value the fake query returns, and a clock the test advances."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.free: float | None = 100

    def query(self) -> float:
        if self.free is None:
            raise QueryFailed("cannot reach http://127.0.0.1:9/api/v1/query: ConnectionError")
        return self.free

    def clock(self) -> float:
        return self.now


def evaluator(feed: Feed, metrics: GateMetrics, mode: OnUnavailable = OnUnavailable.HOLD) -> GateEvaluator:
    initial = {"lambda": GateState.CLOSED, "salad": GateState.CLOSED}
    return GateEvaluator(
        policy(mode), feed.query, metrics, initial, clock=feed.clock, wall_clock=lambda: 1.7e9
    )


def sample(metrics: GateMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_staggered_gates_open_preferred_provider_first() -> None:
    feed, metrics = Feed(), GateMetrics(["lambda", "salad"])
    gates = evaluator(feed, metrics)
    feed.free = 12  # below lambda's 16, above salad's 8
    for _ in range(3):
        gates.observe()
        feed.now += 30
    assert gates.state("lambda") is GateState.OPEN
    assert gates.state("salad") is GateState.CLOSED
    feed.free = 2  # training took nearly everything: the second provider opens too
    for _ in range(3):
        gates.observe()
        feed.now += 30
    assert gates.state("salad") is GateState.OPEN


def test_transition_is_logged_as_one_structured_line(caplog: pytest.LogCaptureFixture) -> None:
    feed, metrics = Feed(), GateMetrics(["lambda", "salad"])
    gates = evaluator(feed, metrics)
    feed.free = 12
    caplog.set_level(logging.INFO, logger="trainyard_gate")
    gates.observe()
    feed.now += 61
    gates.observe()
    [record] = [r for r in caplog.records if r.getMessage() == "gate transition"]
    line = JsonFormatter().format(record)
    assert "\n" not in line
    fields = json.loads(line)
    assert fields["msg"] == "gate transition" and fields["level"] == "info"
    assert fields["gate"] == "lambda" and fields["from"] == "closed" and fields["to"] == "open"
    assert fields["free_gpus"] == 12 and fields["held_seconds"] == 61
    assert fields["open_when_free_gpus_below"] == 16 and fields["open_after_seconds"] == 60
    assert fields["close_when_free_gpus_at_least"] == 64
    assert fields["close_after_seconds"] == 600
    assert fields["reason"] == "free GPUs 12 < 16 for 61s (required 60s)"


def test_metrics_follow_queries_and_transitions() -> None:
    feed, metrics = Feed(), GateMetrics(["lambda", "salad"])
    gates = evaluator(feed, metrics, OnUnavailable.HOLD)
    assert sample(metrics, "trainyard_gate_desired_closed", gate="lambda") == 1
    free = sample(metrics, "trainyard_gate_free_gpus")
    assert free is not None and math.isnan(free)  # nothing observed yet
    assert sample(metrics, "trainyard_gate_transitions_total", gate="lambda", direction="open") == 0

    feed.free = 3
    gates.observe()
    feed.now += 60
    gates.observe()
    assert sample(metrics, "trainyard_gate_desired_closed", gate="lambda") == 0
    assert sample(metrics, "trainyard_gate_transitions_total", gate="lambda", direction="open") == 1
    assert sample(metrics, "trainyard_gate_transitions_total", gate="salad", direction="open") == 1
    assert sample(metrics, "trainyard_gate_query_success") == 1
    assert sample(metrics, "trainyard_gate_free_gpus") == 3
    assert sample(metrics, "trainyard_gate_last_successful_query_timestamp_seconds") == 1.7e9

    feed.free = None
    observation = gates.observe()
    assert observation.free_gpus is None and "cannot reach" in (observation.error or "")
    assert sample(metrics, "trainyard_gate_query_success") == 0
    assert sample(metrics, "trainyard_gate_free_gpus") == 3  # last observed value kept
    assert sample(metrics, "trainyard_gate_errors_total", stage="query") == 1
    assert gates.state("lambda") is GateState.OPEN  # hold


def test_close_mode_outage_closes_every_gate_after_close_hold_time() -> None:
    feed, metrics = Feed(), GateMetrics(["lambda", "salad"])
    gates = GateEvaluator(
        policy(OnUnavailable.CLOSE),
        feed.query,
        metrics,
        {"lambda": GateState.OPEN, "salad": GateState.OPEN},
        clock=feed.clock,
    )
    feed.free = None
    gates.observe()
    feed.now += 599
    gates.observe()
    assert gates.state("lambda") is GateState.OPEN
    feed.now += 1
    decisions = gates.observe().decisions
    assert all(d.changed and d.state is GateState.CLOSED for d in decisions.values())
    assert sample(metrics, "trainyard_gate_transitions_total", gate="salad", direction="close") == 1


# The start-up state read from the nodes (state_of), with the taint lists of
# tests/gate/node_views.py.
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
    assert state_of([node({**OURS, "effect": "PreferNoSchedule"})], GATE) is GateState.OPEN
