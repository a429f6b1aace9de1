"""A replay cut at a horizon (`simulate --until SECONDS`, or the trace's `until:`): what the
controllers did up to that trace second, and nothing after (docs/whatif.md "The horizon").

The replay stops observing at the horizon, but its loop polls (replay.POLL_SECONDS of wall
time, times the speed in trace time) and the watches hand over what they saw with their own
delay, so a few of the states it read may lie past the horizon. Cutting every figure at the
horizon makes the accounting exact and the same whatever the poll's phase:
- a job still waiting at the horizon counts as never admitted, its wait up to the horizon;
- an admission is kept only if it began before the horizon, and ends there at the latest:
  a running job counts its GPU-hours up to it; a finish after it is no finish;
- a preemption after the horizon did not happen in the replay;
- a pod bound (a quarantine seen) before the horizon counts up to it, one bound after does
  not count;
- a job arriving at or after the horizon is not submitted at all (replay.py), and counted
  apart: it is no part of the replayed window.
Pure functions of trace seconds, tested with literals (tests/whatif/test_horizon.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace

from whatif.report import Bound, Outcome, Quarantine


def resolve(until: float | None, trace_until: float | None) -> float | None:
    """The replay's horizon in trace seconds, or None to run until every job finished:
    `until` (simulate's --until; math.inf for 'end') wins over the trace's `until:`."""
    chosen = trace_until if until is None else until
    return None if chosen is None or chosen == math.inf else chosen


def first_arrival_if_none_before(arrivals: Iterable[float], horizon: float) -> float | None:
    """The first arrival when no job arrives before `horizon` (nothing to replay), else None."""
    first = min(arrivals, default=None)
    return first if first is not None and first >= horizon else None


def outcome(job: Outcome, horizon: float) -> Outcome:
    """`job` as the replay stood at `horizon` (see the module docstring)."""
    admissions = tuple((start, min(end, horizon)) for start, end in job.admissions if start < horizon)
    finished = job.finished if job.finished is not None and job.finished <= horizon else None
    return replace(
        job,
        arrived=min(job.arrived, horizon),
        admissions=admissions,
        finished=finished,
        ended=horizon,
        preempted=tuple(p for p in job.preempted if p.at < horizon),
    )


def bound(pod: Bound, horizon: float) -> Bound | None:
    """`pod` bound up to `horizon`, or None if it was bound only after it."""
    return replace(pod, end=min(pod.end, horizon)) if pod.start < horizon else None


def quarantine(taint: Quarantine, horizon: float) -> Quarantine | None:
    """`taint` up to `horizon`, or None if it was seen only after it."""
    return replace(taint, end=min(taint.end, horizon)) if taint.start < horizon else None


def cut(
    outcomes: tuple[Outcome, ...],
    pods: tuple[Bound, ...],
    taints: tuple[Quarantine, ...],
    horizon: float,
) -> tuple[tuple[Outcome, ...], tuple[Bound, ...], tuple[Quarantine, ...]]:
    """Every figure of one replay cut at `horizon` (trace seconds)."""
    kept_pods = tuple(b for b in (bound(p, horizon) for p in pods) if b is not None)
    kept_taints = tuple(q for q in (quarantine(t, horizon) for t in taints) if q is not None)
    return tuple(outcome(o, horizon) for o in outcomes), kept_pods, kept_taints


def still(outcomes: tuple[Outcome, ...]) -> tuple[int, int]:
    """(never admitted, running) at the end of a cut replay: jobs with no admission before
    it, and jobs whose last admission was still holding quota at it."""
    never = sum(1 for o in outcomes if not o.admissions)
    running = sum(
        1 for o in outcomes if o.admissions and o.finished is None and o.admissions[-1][1] >= o.ended
    )
    return never, running
