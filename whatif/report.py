"""What a replay measured, per team and tier, and base -> head with the difference.

Pure arithmetic over `Outcome`s (what the controllers wrote, turned into trace seconds by
replay.py), so it is tested with literals (tests/whatif/test_report.py):
- queue wait: first admission minus arrival (the Workload's creation); a job never admitted
  waits until the replay ended and is counted in `never`;
- p50 / p95: nearest rank (the smallest wait with at least p% of the waits at or below it),
  so every figure is a wait that happened, not an interpolation;
- admitted GPU-hours: GPUs x the time each admission held until its eviction or finish;
- preemptions: one per Preempted condition Kueue set, named preemptor -> victim;
- per-pool utilisation: GPUs x the time each of the replay's pods was bound to a node of the
  pool (bound to Succeeded, Failed or deleted), over the pool's GPUs in the spec (every node,
  the reserve too) x the trace seconds the replay observed;
- spill per provider: GPUs x the time each of the replay's pods was bound to the provider's
  virtual node (its `trainyard.dev/provider` label), and that times the spec's
  costPerGpuHourUsd;
- quarantines: each quarantine taint the health controller put on a node during the replay,
  and node-seconds from when it was seen until it was seen gone (or the replay ended).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from generators.output.texttable import table


@dataclass(frozen=True)
class Preemption:
    victim: str  # job name in the trace
    preemptor: str  # job name, or "?" when Kueue named a workload the replay did not create
    reason: str  # Kueue's condition reason: InClusterQueue, InCohortReclamation, ...
    at: float  # trace seconds


@dataclass(frozen=True)
class Bound:
    """One pod of the replay on the node the scheduler bound it to, in trace seconds."""

    job: str
    pool: str  # the node's trainyard.dev/pool label
    node: str
    gpus: int
    start: float  # first seen bound
    end: float  # first seen Succeeded, Failed or deleted (else when the replay ended)
    provider: str = ""  # the node's trainyard.dev/provider label: a provider's virtual node


@dataclass(frozen=True)
class Quarantine:
    """A quarantine taint the health controller set on a node, in trace seconds."""

    node: str
    pool: str
    reason: str  # the taint's value
    start: float
    end: float  # seen gone, else when the replay ended


@dataclass(frozen=True)
class Cut:
    """The replay stopped at its horizon with work left (whatif/horizon.py)."""

    at: float  # the horizon, trace seconds
    never: int  # jobs not admitted by then: never admitted, their wait up to it
    running: int  # jobs holding quota then: their GPU-hours up to it
    left_out: int  # jobs arriving at or after it: not submitted


@dataclass(frozen=True)
class Outcome:
    """One job as the controllers handled it, in trace seconds from the replay's start."""

    job: str
    team: str
    tier: str
    gpus: int  # pods x GPUs per pod
    arrived: float
    admissions: tuple[tuple[float, float], ...]  # (admitted, released) each time it held quota
    finished: float | None  # None: still running or pending when the replay ended
    ended: float  # when the replay stopped observing
    pools: tuple[str, ...] = ()  # pools its pods ran on
    preempted: tuple[Preemption, ...] = field(default=())
    duration: float = 0.0  # the trace's: how long its pods run once started

    @property
    def wait(self) -> float:
        first = self.admissions[0][0] if self.admissions else self.ended
        return max(0.0, first - self.arrived)

    @property
    def gpu_hours(self) -> float:
        return self.gpus * sum(max(0.0, end - start) for start, end in self.admissions) / 3600


def hold_latency(outcomes: Iterable[Outcome]) -> tuple[float, int] | None:
    """(median of how much longer than its pods ran a job held its quota, jobs counted), over
    jobs admitted once and finished: the box's own start and finish latency, times the speed.
    Every wait behind such a job comes out that much late (docs/whatif.md, Fidelity)."""
    extra = [
        o.admissions[0][1] - o.admissions[0][0] - o.duration
        for o in outcomes
        if len(o.admissions) == 1 and o.finished is not None and o.duration > 0
    ]
    return (nearest_rank(extra, 50), len(extra)) if extra else None


def _latency_line(side: Side) -> str:
    found = hold_latency(side.outcomes)
    if found is None:
        return f"latency, {side.label}: no job was admitted once and finished"
    return (
        f"latency, {side.label}: a job held its quota {duration(found[0])} longer than its pods ran "
        f"(median of {found[1]}); waits behind it come out that much late"
    )


def nearest_rank(values: Sequence[float], percent: float) -> float:
    """The smallest value with at least `percent` % of `values` at or below it."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(percent / 100 * len(ordered)) - 1)]


@dataclass(frozen=True)
class Row:
    team: str
    tier: str
    jobs: int
    never: int  # never admitted while the replay ran
    wait_p50: float
    wait_p95: float
    wait_max: float
    gpu_hours: float
    preempted: int  # times a job of this row was preempted


def summary(outcomes: Iterable[Outcome]) -> list[Row]:
    """One row per (team, tier), sorted by name."""
    groups: dict[tuple[str, str], list[Outcome]] = {}
    for outcome in outcomes:
        groups.setdefault((outcome.team, outcome.tier), []).append(outcome)
    rows = []
    for (team, tier), group in sorted(groups.items()):
        waits = [o.wait for o in group]
        rows.append(
            Row(
                team,
                tier,
                len(group),
                sum(1 for o in group if not o.admissions),
                nearest_rank(waits, 50),
                nearest_rank(waits, 95),
                max(waits),
                sum(o.gpu_hours for o in group),
                sum(len(o.preempted) for o in group),
            )
        )
    return rows


def preemptions(outcomes: Iterable[Outcome]) -> list[tuple[str, str, int]]:
    """(preemptor team, victim team, count), most first; a preemptor the replay did not
    create counts as team '?'."""
    team_of = {}
    found: list[Preemption] = []
    for outcome in outcomes:
        team_of[outcome.job] = outcome.team
        found.extend(outcome.preempted)
    counts: dict[tuple[str, str], int] = {}
    for event in found:
        victim = team_of.get(event.victim, "?")
        pair = (team_of.get(event.preemptor, "?"), victim)
        counts[pair] = counts.get(pair, 0) + 1
    return sorted(((a, b, n) for (a, b), n in counts.items()), key=lambda x: (-x[2], x[0], x[1]))


def duration(seconds: float) -> str:
    """42s, 4m05s, 1h05m: compact and exact enough for a queue wait."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def signed(seconds: float) -> str:
    return ("+" if seconds >= 0 else "-") + duration(abs(seconds))


HEADER = (
    "team",
    "tier",
    "jobs",
    "never admitted",
    "wait p50",
    "wait p95",
    "wait max",
    "GPU-hours",
    "preempted",
)


def _cells(row: Row) -> list[str]:
    return [
        row.team,
        row.tier,
        str(row.jobs),
        str(row.never),
        duration(row.wait_p50),
        duration(row.wait_p95),
        duration(row.wait_max),
        f"{row.gpu_hours:.1f}",
        str(row.preempted),
    ]


def _compared(base: Row | None, head: Row | None) -> list[str]:
    """Cells 'base -> head (difference)' of one team and tier; '-' for a side without it."""
    some = head or base
    assert some is not None
    cells = [some.team, some.tier]
    for name in ("jobs", "never"):
        b, h = (getattr(r, name) if r else None for r in (base, head))
        cells.append(f"{'-' if b is None else b} -> {'-' if h is None else h}")
    for name in ("wait_p50", "wait_p95", "wait_max"):
        b, h = (getattr(r, name) if r else None for r in (base, head))
        text = f"{'-' if b is None else duration(b)} -> {'-' if h is None else duration(h)}"
        cells.append(text + (f" ({signed(h - b)})" if b is not None and h is not None else ""))
    b, h = (r.gpu_hours if r else None for r in (base, head))
    text = f"{'-' if b is None else f'{b:.1f}'} -> {'-' if h is None else f'{h:.1f}'}"
    cells.append(text + (f" ({h - b:+.1f})" if b is not None and h is not None else ""))
    b2, h2 = (r.preempted if r else None for r in (base, head))
    text = f"{'-' if b2 is None else b2} -> {'-' if h2 is None else h2}"
    cells.append(text + (f" ({h2 - b2:+d})" if b2 is not None and h2 is not None else ""))
    return cells


def rows_of(head: Sequence[Row], base: Sequence[Row] | None) -> list[list[str]]:
    if base is None:
        return [_cells(r) for r in head]
    by_base = {(r.team, r.tier): r for r in base}
    by_head = {(r.team, r.tier): r for r in head}
    return [_compared(by_base.get(k), by_head.get(k)) for k in sorted(by_base.keys() | by_head.keys())]


def _preemption_lines(pairs: list[tuple[str, str, int]]) -> list[str]:
    return [f"{a} preempted {b}: {n}" for a, b, n in pairs] or ["no preemptions"]


@dataclass(frozen=True)
class Side:
    label: str  # "head" or "base <ref>"
    outcomes: tuple[Outcome, ...]
    bound: tuple[Bound, ...] = ()
    quarantines: tuple[Quarantine, ...] = ()
    capacity: tuple[tuple[str, int], ...] = ()  # (pool, GPUs) of the side's spec
    span: float = 0.0  # trace seconds the replay observed
    prices: tuple[tuple[str, float], ...] = ()  # (provider, costPerGpuHourUsd) of the side's spec
    cut: Cut | None = None  # the replay stopped at its horizon with work left


@dataclass(frozen=True)
class Spill:
    provider: str
    gpu_hours: float  # GPU-hours the replay's pods were bound to the provider's virtual node
    usd: float  # gpu_hours x the spec's costPerGpuHourUsd


def spill(side: Side) -> list[Spill]:
    """One row per provider of the side's spec, in the spec's order (preferred first)."""
    held: dict[str, float] = {}
    for pod in side.bound:
        if pod.provider:
            held[pod.provider] = held.get(pod.provider, 0.0) + pod.gpus * max(0.0, pod.end - pod.start)
    return [
        Spill(name, held.get(name, 0.0) / 3600, held.get(name, 0.0) / 3600 * usd) for name, usd in side.prices
    ]


SPILL_HEADER = ("provider", "spill GPU-hours", "cost USD")


def _spill_rows(head: Side, base: Side | None) -> list[list[str]]:
    return _side_by_side(
        [(s.provider, s) for s in spill(head)],
        [(s.provider, s) for s in spill(base)] if base else None,
        (lambda s: f"{s.gpu_hours:.2f}", lambda d: f"{d:+.2f}", lambda s: s.gpu_hours),
        (lambda s: f"{s.usd:.2f}", lambda d: f"{d:+.2f}", lambda s: s.usd),
    )


@dataclass(frozen=True)
class PoolUse:
    pool: str
    gpus: int  # the pool's GPUs in the spec
    gpu_hours: float  # GPU-hours the replay's pods were bound there
    utilisation: float  # gpu_hours / (gpus x span), 0 to 1


def pool_use(side: Side) -> list[PoolUse]:
    """One row per pool of the side's spec, in the spec's order."""
    held: dict[str, float] = {}
    for pod in side.bound:
        held[pod.pool] = held.get(pod.pool, 0.0) + pod.gpus * max(0.0, pod.end - pod.start)
    return [
        PoolUse(pool, gpus, held.get(pool, 0.0) / 3600, held.get(pool, 0.0) / (gpus * side.span))
        if gpus and side.span > 0
        else PoolUse(pool, gpus, held.get(pool, 0.0) / 3600, 0.0)
        for pool, gpus in side.capacity
    ]


POOL_HEADER = ("pool", "GPUs", "GPU-hours bound", "utilisation")


def _pool_rows(head: Side, base: Side | None) -> list[list[str]]:
    return _side_by_side(
        [(u.pool, u) for u in pool_use(head)],
        [(u.pool, u) for u in pool_use(base)] if base else None,
        (lambda u: str(u.gpus), None, lambda u: u.gpus),
        (lambda u: f"{u.gpu_hours:.1f}", lambda d: f"{d:+.1f}", lambda u: u.gpu_hours),
        (lambda u: f"{u.utilisation:.1%}", lambda d: f"{d * 100:+.1f} points", lambda u: u.utilisation),
    )


Column = tuple[Callable[[Any], str], Callable[[float], str] | None, Callable[[Any], float]]


def _side_by_side(
    head: list[tuple[str, Any]], base: list[tuple[str, Any]] | None, *columns: Column
) -> list[list[str]]:
    """Rows of (name, value per column): the head's figure alone, or 'base -> head (change)'
    with '-' for a side without the row; a column without a change format shows none. The
    base's order first, then rows only the head has."""
    heads = dict(head)
    if base is None:
        return [[name, *(shown(item) for shown, _, _ in columns)] for name, item in head]
    bases = dict(base)
    rows = []
    for name in [*bases, *(n for n in heads if n not in bases)]:
        b, h = bases.get(name), heads.get(name)
        cells = [name]
        for shown, change, value in columns:
            cell = f"{shown(b) if b else '-'} -> {shown(h) if h else '-'}"
            if b and h and change is not None:
                cell += f" ({change(value(h) - value(b))})"
            cells.append(cell)
        rows.append(cells)
    return rows


def _quarantine_line(side: Side) -> str:
    if not side.quarantines:
        return f"quarantines, {side.label}: none"
    seconds = sum(max(0.0, q.end - q.start) for q in side.quarantines)
    nodes = len({q.node for q in side.quarantines})
    each = ", ".join(f"{q.node} ({q.reason}, {duration(q.end - q.start)})" for q in side.quarantines)
    return (
        f"quarantines, {side.label}: {len(side.quarantines)} on {nodes} node{'s' if nodes != 1 else ''}, "
        f"{duration(seconds)} of node time: {each}"
    )


def _cut_line(side: Side) -> str | None:
    cut = side.cut
    if cut is None:
        return None
    left = f"; {jobs(cut.left_out)} arriving after it not submitted" if cut.left_out else ""
    return (
        f"cut, {side.label}: the replay stopped at {duration(cut.at)} of trace: {jobs(cut.never)} never "
        f"admitted by then (their wait up to it), {cut.running} running (their GPU-hours up to it){left}"
    )


def jobs(count: int) -> str:
    return f"{count} job" + ("" if count == 1 else "s")


def _cut_lines(head: Side, base: Side | None) -> list[str]:
    return [line for line in (_cut_line(s) for s in (base, head) if s is not None) if line is not None]


def text(head: Side, base: Side | None, title: str) -> str:
    rows = rows_of(summary(head.outcomes), summary(base.outcomes) if base else None)
    out = [title, "", table(HEADER, rows), ""]
    if head.capacity:
        out += [table(POOL_HEADER, _pool_rows(head, base)), ""]
    if head.prices:
        out += [table(SPILL_HEADER, _spill_rows(head, base)), ""]
    for side in (s for s in (base, head) if s is not None):
        out.append(f"preemptions, {side.label}:")
        out.extend(f"  {line}" for line in _preemption_lines(preemptions(side.outcomes)))
    out.extend(_quarantine_line(side) for side in (base, head) if side is not None)
    out.extend(_latency_line(side) for side in (base, head) if side is not None)
    out.extend(_cut_lines(head, base))
    return "\n".join(out) + "\n"


def markdown(head: Side, base: Side | None, title: str) -> str:
    rows = rows_of(summary(head.outcomes), summary(base.outcomes) if base else None)

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    out = [f"### {title}", "", line(HEADER), line(["---"] * len(HEADER)), *(line(r) for r in rows), ""]
    if head.capacity:
        pools = _pool_rows(head, base)
        out += [line(POOL_HEADER), line(["---"] * len(POOL_HEADER)), *(line(r) for r in pools), ""]
    if head.prices:
        spilled = _spill_rows(head, base)
        out += [line(SPILL_HEADER), line(["---"] * len(SPILL_HEADER)), *(line(r) for r in spilled), ""]
    for side in (s for s in (base, head) if s is not None):
        out.append(f"Preemptions, {side.label}: " + "; ".join(_preemption_lines(preemptions(side.outcomes))))
        out.append("")
    out.extend(_quarantine_line(side) + "\n" for side in (base, head) if side is not None)
    out.extend(_latency_line(side) + "\n" for side in (base, head) if side is not None)
    out.extend(line + "\n" for line in _cut_lines(head, base))
    return "\n".join(out)


def as_json(head: Side, base: Side | None, title: str) -> str:
    sides = {
        s.label: {
            "rows": [asdict(r) for r in summary(s.outcomes)],
            "jobs": [asdict(o) | {"wait": o.wait, "gpuHours": o.gpu_hours} for o in s.outcomes],
            "pools": [asdict(u) for u in pool_use(s)],
            "spill": [asdict(x) for x in spill(s)],
            "quarantines": [asdict(q) for q in s.quarantines],
            "span": s.span,
            "cut": asdict(s.cut) if s.cut is not None else None,
        }
        for s in (base, head)
        if s is not None
    }
    return json.dumps({"title": title, "sides": sides}, indent=2, sort_keys=True) + "\n"
