"""The timer both policy kinds share: "condition seen on every query for N seconds".

The overflow gate holds one per gate (overflow/hysteresis.py), the health controller one
per node and reason (health/state.py). No I/O, no clock: the caller passes `now`.
"""

from __future__ import annotations

from typing import Literal, overload


@overload
def run_start(since: float | None, seen: Literal[True], now: float) -> float: ...
@overload
def run_start(since: float | None, seen: bool, now: float) -> float | None: ...
def run_start(since: float | None, seen: bool, now: float) -> float | None:
    """The timer both policy kinds share: "condition seen on every query for N seconds".

    `since` is the time of the first observation of the current unbroken run that saw the
    condition (None: the last one did not). An observation without it, a failed query
    included, ends the run: one good query restarts the timer.
    """
    if not seen:
        return None
    return now if since is None else since


def held_seconds(since: float, now: float) -> float:
    """How long a run that started at `since` has lasted at `now` (never negative)."""
    return max(0.0, now - since)
