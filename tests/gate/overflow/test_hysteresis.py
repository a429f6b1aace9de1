"""The state machine alone, driven by an explicit clock: hold times, resets, the dead band,
and what a Prometheus outage counts as under each onPrometheusUnavailable mode."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trainyard_gate.overflow.hysteresis import (
    Decision,
    GateMemory,
    GateState,
    OnUnavailable,
    Thresholds,
    step,
)

from tests.support.examples import examples

OPEN, CLOSED = GateState.OPEN, GateState.CLOSED
# Close when >= 64 free for 600 s; open when < 16 free for 60 s (the example policy).
BAND = Thresholds(
    close_when_free_gpus_at_least=64,
    close_after_seconds=600,
    open_when_free_gpus_below=16,
    open_after_seconds=60,
)


@dataclass
class Gate:
    """A gate fed by hand: the test owns the clock."""

    state: GateState
    on_unavailable: OnUnavailable = OnUnavailable.HOLD
    thresholds: Thresholds = BAND
    now: float = 0.0
    memory: GateMemory = field(init=False)
    log: list[Decision] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.memory = GateMemory(self.state)

    def see(self, free: float | None, after: float = 0.0) -> Decision:
        """Advance the clock by `after` seconds, then observe `free`."""
        self.now += after
        self.memory, decision = step(self.memory, self.now, free, self.thresholds, self.on_unavailable)
        self.log.append(decision)
        return decision

    def hold(self, free: float | None, seconds: float, every: float = 30.0) -> Decision:
        """Observe `free` every `every` seconds for `seconds` seconds (first one now)."""
        decision = self.see(free)
        elapsed = 0.0
        while elapsed + every <= seconds:
            elapsed += every
            decision = self.see(free, after=every)
        return decision

    @property
    def transitions(self) -> list[tuple[GateState, GateState]]:
        return [(d.previous, d.state) for d in self.log if d.changed]


def test_closes_only_after_close_hold_time() -> None:
    gate = Gate(OPEN)
    assert gate.hold(100, seconds=570).state is OPEN  # 570 s < 600 s
    decision = gate.see(100, after=30)  # 600 s held
    assert decision.changed and decision.state is CLOSED
    assert decision.held_seconds == 600 and decision.required_seconds == 600
    assert decision.previous is OPEN and decision.free_gpus == 100
    assert gate.transitions == [(OPEN, CLOSED)]


def test_exact_threshold_counts_as_plenty() -> None:
    gate = Gate(OPEN)
    assert gate.hold(64, seconds=600).state is CLOSED  # >= N, not > N


def test_dip_below_close_threshold_resets_the_close_timer() -> None:
    gate = Gate(OPEN)
    gate.hold(100, seconds=570)
    gate.see(63, after=30)  # one observation below N: the run is broken
    assert gate.memory.leaving_since is None
    assert gate.hold(100, seconds=570, every=30).state is OPEN  # timer restarted at the dip+30
    assert gate.see(100, after=30).state is CLOSED
    assert gate.transitions == [(OPEN, CLOSED)]


def test_opens_after_open_hold_time() -> None:
    gate = Gate(CLOSED)
    assert gate.see(10).state is CLOSED
    assert gate.see(10, after=59).state is CLOSED
    decision = gate.see(15, after=1)  # 15 < 16, held 60 s
    assert decision.changed and decision.state is OPEN and decision.held_seconds == 60


def test_rise_above_open_threshold_resets_the_open_timer() -> None:
    gate = Gate(CLOSED)
    gate.see(0)
    gate.see(16, after=50)  # 16 is not < 16
    gate.see(0, after=5)
    assert gate.see(0, after=59).state is CLOSED  # 59 s since the new run began
    assert gate.see(0, after=1).state is OPEN


@pytest.mark.parametrize("start", [OPEN, CLOSED])
def test_no_flapping_inside_the_band(start: GateState) -> None:
    gate = Gate(start)
    for step_number in range(200):
        gate.see(16 + step_number % 48, after=30)  # every value in [M, N)
    assert gate.transitions == []
    assert gate.memory.leaving_since is None


def test_oscillation_across_both_thresholds_faster_than_hold_times_never_moves() -> None:
    gate = Gate(OPEN)
    for _ in range(50):
        gate.hold(100, seconds=500)
        gate.hold(0, seconds=30)
    assert gate.transitions == []


def test_zero_hold_time_transitions_on_first_observation() -> None:
    gate = Gate(CLOSED, thresholds=Thresholds(64, 0, 16, 0))
    assert gate.see(0).state is OPEN
    assert gate.see(64).state is CLOSED


def test_full_cycle_training_arrives_and_leaves() -> None:
    gate = Gate(CLOSED)
    gate.hold(128, seconds=3600)  # idle cluster: stays closed, nothing spills
    gate.hold(4, seconds=60)  # training takes the GPUs: opens after 60 s
    gate.hold(40, seconds=3600)  # partly busy: stays open
    gate.hold(80, seconds=600)  # training ends: closes after 600 s
    assert gate.transitions == [(CLOSED, OPEN), (OPEN, CLOSED)]


# Prometheus down: what None counts as under each onPrometheusUnavailable mode.


@pytest.mark.parametrize("start", [OPEN, CLOSED])
def test_hold_keeps_state_through_an_outage(start: GateState) -> None:
    gate = Gate(start, OnUnavailable.HOLD)
    decision = gate.hold(None, seconds=7200)
    assert decision.state is start and gate.transitions == []
    assert decision.free_gpus is None and "unavailable" in decision.reason


def test_hold_outage_resets_a_running_timer() -> None:
    gate = Gate(CLOSED, OnUnavailable.HOLD)
    gate.see(0)
    gate.see(0, after=50)
    gate.see(None, after=5)  # not observed: the condition is no longer known to hold
    assert gate.see(0, after=5).state is CLOSED
    assert gate.see(0, after=59).state is CLOSED
    assert gate.see(0, after=1).state is OPEN


def test_close_mode_closes_after_close_hold_time_of_outage() -> None:
    gate = Gate(OPEN, OnUnavailable.CLOSE)
    assert gate.hold(None, seconds=570).state is OPEN  # a short blip changes nothing
    decision = gate.see(None, after=30)
    assert decision.state is CLOSED and decision.held_seconds == 600
    assert gate.hold(None, seconds=7200).state is CLOSED  # and stays closed


def test_close_mode_outage_continues_a_close_run_begun_by_data() -> None:
    gate = Gate(OPEN, OnUnavailable.CLOSE)
    gate.hold(100, seconds=300)
    assert gate.hold(None, seconds=270, every=30).state is OPEN
    assert gate.see(None, after=30).state is CLOSED


def test_close_mode_outage_breaks_an_open_run() -> None:
    gate = Gate(CLOSED, OnUnavailable.CLOSE)
    gate.hold(0, seconds=30)
    gate.see(None, after=20)
    assert gate.see(0, after=10).state is CLOSED  # run restarted: held 0 s


def test_open_mode_opens_after_open_hold_time_of_outage() -> None:
    gate = Gate(CLOSED, OnUnavailable.OPEN)
    assert gate.see(None).state is CLOSED
    assert gate.see(None, after=59).state is CLOSED
    assert gate.see(None, after=1).state is OPEN
    assert gate.hold(None, seconds=7200).state is OPEN


def test_open_mode_data_after_outage_takes_over() -> None:
    gate = Gate(OPEN, OnUnavailable.OPEN)
    gate.hold(None, seconds=600)
    assert gate.hold(100, seconds=600).state is CLOSED


def test_nan_counts_as_unavailable() -> None:
    gate = Gate(OPEN, OnUnavailable.CLOSE, thresholds=Thresholds(64, 0, 16, 0))
    assert gate.see(float("nan")).state is CLOSED


def test_thresholds_refuse_an_inverted_band() -> None:
    with pytest.raises(ValueError, match="greater"):
        Thresholds(16, 600, 16, 60)
    with pytest.raises(ValueError, match="negative"):
        Thresholds(64, -1, 16, 60)


# Property: every transition is justified by an unbroken run of qualifying observations
# lasting at least the hold time, whatever the sequence of values, gaps and outages.

observations = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=120),  # seconds since the previous observation
        st.one_of(st.none(), st.integers(min_value=0, max_value=100)),
    ),
    max_size=60,
)


def _pulls(state: GateState, free: int | None, mode: OnUnavailable) -> bool:
    if free is None:
        return mode.value == ("close" if state is OPEN else "open")
    return free >= 64 if state is OPEN else free < 16


@settings(max_examples=examples(200), deadline=None)
@given(
    start=st.sampled_from(list(GateState)),
    mode=st.sampled_from(list(OnUnavailable)),
    seen=observations,
)
def test_every_transition_is_earned(
    start: GateState, mode: OnUnavailable, seen: list[tuple[float, int | None]]
) -> None:
    gate = Gate(start, mode)
    times: list[float] = []
    for gap, free in seen:
        before = gate.memory.state
        decision = gate.see(free, after=gap)
        times.append(gate.now)
        if not decision.changed:
            continue
        required = 600 if before is OPEN else 60
        # Walk back over the unbroken run of observations pulling toward the new state.
        index = len(times) - 1
        while index > 0 and _pulls(before, seen[index - 1][1], mode):
            if gate.log[index - 1].changed:
                break
            index -= 1
        assert gate.now - times[index] >= required
        assert decision.held_seconds >= required
