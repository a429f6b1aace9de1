"""gate/trainyard_gate/runtime/timer.py: the "seen on every query for N seconds" run both
policy kinds share (the overflow gate's hysteresis, the health controller's per-node timers)."""

from __future__ import annotations

from trainyard_gate.runtime.timer import held_seconds, run_start


def test_a_run_starts_at_its_first_observation_and_keeps_that_start() -> None:
    since = run_start(None, True, 100.0)
    assert since == 100.0
    assert run_start(since, True, 160.0) == 100.0
    assert held_seconds(100.0, 160.0) == 60.0


def test_one_observation_without_the_condition_ends_the_run() -> None:
    assert run_start(100.0, False, 130.0) is None
    assert run_start(None, True, 140.0) == 140.0  # the next sighting starts afresh


def test_a_clock_behind_the_start_holds_zero_seconds() -> None:
    assert held_seconds(100.0, 99.5) == 0.0
