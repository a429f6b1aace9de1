"""The gate's state machine: one observation in, one decision out. No I/O, no clock.

A gate is CLOSED (taint on the virtual nodes: nothing spills) or OPEN (taint off: inference
may spill). It leaves its state only when the condition for the other state has been seen
on every observation for the whole hold time:

    CLOSED -> OPEN    free GPUs <  openWhenFreeGpusBelow     for openAfterSeconds
    OPEN   -> CLOSED  free GPUs >= closeWhenFreeGpusAtLeast  for closeAfterSeconds

Between the two thresholds neither condition holds, so the timers reset and the gate stays
put: that band is what stops flapping. An observation without a usable value (Prometheus
unreachable, no sample, several samples) counts as the condition the policy names:
`hold` satisfies neither (timers reset, state kept), `close` and `open` count toward that
state, so an outage changes the gate only after it has lasted the matching hold time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from ..runtime.timer import held_seconds, run_start


class GateState(StrEnum):
    """Whether the gate taint is on the provider's virtual nodes."""

    OPEN = "open"  # taint absent: pods may schedule onto the provider
    CLOSED = "closed"  # taint present: nothing new schedules onto the provider


class OnUnavailable(StrEnum):
    """What an observation without a usable free-GPU value counts as."""

    HOLD = "hold"  # neither condition: keep the current state, reset timers
    CLOSE = "close"  # counts toward CLOSED (after closeAfterSeconds)
    OPEN = "open"  # counts toward OPEN (after openAfterSeconds)


@dataclass(frozen=True)
class Thresholds:
    """Hysteresis band of one gate. GPU counts are whole GPUs, times are seconds."""

    close_when_free_gpus_at_least: int
    close_after_seconds: float
    open_when_free_gpus_below: int
    open_after_seconds: float

    def __post_init__(self) -> None:
        # overflow/policy.py reports these with file positions; this guards direct construction.
        if self.close_when_free_gpus_at_least <= self.open_when_free_gpus_below:
            raise ValueError("close threshold must be greater than the open threshold")
        if min(self.close_after_seconds, self.open_after_seconds) < 0:
            raise ValueError("hold times must not be negative")


@dataclass(frozen=True)
class GateMemory:
    """What the machine remembers between observations."""

    state: GateState
    # Time of the first observation of the current unbroken run that satisfied the
    # condition for leaving `state`; None when the last observation did not satisfy it.
    leaving_since: float | None = None


@dataclass(frozen=True)
class Decision:
    """Outcome of one observation: the numbers a transition log line needs."""

    previous: GateState
    state: GateState
    free_gpus: float | None  # None: no usable value this time
    held_seconds: float  # how long the condition for leaving `previous` has held
    required_seconds: float  # hold time of the transition being considered (0 if none)
    reason: str

    @property
    def changed(self) -> bool:
        return self.state is not self.previous


def step(
    memory: GateMemory,
    now: float,
    free_gpus: float | None,
    thresholds: Thresholds,
    on_unavailable: OnUnavailable,
) -> tuple[GateMemory, Decision]:
    """Feed one observation taken at `now` (seconds, any monotonic origin)."""
    if free_gpus is not None and not math.isfinite(free_gpus):
        free_gpus = None
    target, why = _leave_condition(memory.state, free_gpus, thresholds, on_unavailable)
    if target is None:
        decision = Decision(memory.state, memory.state, free_gpus, 0.0, 0.0, why)
        return GateMemory(memory.state), decision

    since = run_start(memory.leaving_since, True, now)
    held = held_seconds(since, now)
    required = thresholds.close_after_seconds if target is GateState.CLOSED else thresholds.open_after_seconds
    if held >= required:
        reason = f"{why} for {held:g}s (required {required:g}s)"
        return GateMemory(target), Decision(memory.state, target, free_gpus, held, required, reason)
    reason = f"{why} for {held:g}s of {required:g}s"
    decision = Decision(memory.state, memory.state, free_gpus, held, required, reason)
    return GateMemory(memory.state, since), decision


def _leave_condition(
    state: GateState,
    free_gpus: float | None,
    thresholds: Thresholds,
    on_unavailable: OnUnavailable,
) -> tuple[GateState | None, str]:
    """The state this observation pulls toward (None: stay), and why, in words."""
    if free_gpus is None:
        why = f"Prometheus unavailable, policy {on_unavailable.value}"
        if on_unavailable is OnUnavailable.CLOSE and state is GateState.OPEN:
            return GateState.CLOSED, why
        if on_unavailable is OnUnavailable.OPEN and state is GateState.CLOSED:
            return GateState.OPEN, why
        return None, why
    close_at = thresholds.close_when_free_gpus_at_least
    open_below = thresholds.open_when_free_gpus_below
    if state is GateState.OPEN and free_gpus >= close_at:
        return GateState.CLOSED, f"free GPUs {free_gpus:g} >= {close_at}"
    if state is GateState.CLOSED and free_gpus < open_below:
        return GateState.OPEN, f"free GPUs {free_gpus:g} < {open_below}"
    return None, f"free GPUs {free_gpus:g}, gate stays {state.value}"
