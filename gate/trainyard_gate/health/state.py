"""The NodeHealthPolicy's decisions, one pass at a time. No I/O, no clock.

Per node and reason a timer (runtime.timer.run_start, the overflow gate's timer too): a node is
due for quarantine once a condition's query has returned it on every query for that
condition's quarantineAfterSeconds; a quarantined node is released once no condition
returned it on every query for releaseAfterSeconds. A failed query (any one) is a pass
with no changes: every running timer restarts, so an outage can neither quarantine nor
release.

The cap: due nodes are taken oldest-bad-first (ties by name); one is quarantined only if
afterwards the fleet total <= maxNodes and its pool's total <= floor(pct x pool nodes /
100). The others are held back (and counted); their timers keep running, so they go as
soon as there is room. Releases are never capped and happen before quarantines.

State comes from the nodes: the first time a node is listed (start-up, or a node that
joins a pool later) a node carrying the taint key with NoSchedule is taken as quarantined,
its reasons and time from the annotations (else the taint value and now). Its release
timer starts at the first good query after that, so a restart never releases early.
Afterwards the controller owns the key and the two annotations on pool nodes and rewrites
any drift.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..runtime.nodes import NodeTaints, Want, carries
from ..runtime.timer import held_seconds, run_start
from .policy import NodeHealthPolicy

QUARANTINE, RELEASE, REWRITE = "quarantine", "release", "rewrite"
Listing = Mapping[str, Sequence[NodeTaints]]  # pool name -> its nodes
BadNodes = Mapping[str, frozenset[str]]  # reason -> nodes its query returned
Due = tuple[float, str, str, tuple[str, ...]]  # oldest bad start, node, pool, due reasons


@dataclass
class Quarantined:
    pool: str
    reasons: tuple[str, ...]  # the first is the taint value
    since: float  # unix time of the quarantine (the `since` annotation)
    good_since: float | None = None  # start of the current run of queries with no reason


@dataclass(frozen=True)
class Change:
    node: NodeTaints  # as listed this pass
    action: str  # quarantine | release | rewrite
    want: Want


@dataclass(frozen=True)
class Candidate:
    node: str
    pool: str
    reasons: tuple[str, ...]  # due reasons, spec order
    bad_since: float  # oldest start among the due reasons' timers
    admitted: bool  # False: the cap held it back


@dataclass(frozen=True)
class Outcome:
    """One pass: what to patch and the numbers behind it (for metrics and logs)."""

    queried: bool  # False: some query failed, nothing changed
    changes: tuple[Change, ...] = ()
    candidates: tuple[Candidate, ...] = ()
    released: tuple[tuple[str, Quarantined, float], ...] = ()  # node, what it was, good seconds
    pool_nodes: Mapping[str, int] = field(default_factory=dict)
    pool_caps: Mapping[str, int] = field(default_factory=dict)
    held_back: Mapping[str, int] = field(default_factory=dict)
    bad: Mapping[str, int] = field(default_factory=dict)  # reason -> pool nodes returned


def rfc3339(unix: float) -> str:
    return datetime.fromtimestamp(int(unix), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str | None) -> float | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.timestamp() if moment.tzinfo is not None else None


def _action(node: NodeTaints, want: Want) -> str:
    """Named after what the patch does to the node: the taint goes on, comes off, or (taint
    value or annotations drifted) is rewritten. So a quarantine whose patch failed is still
    counted as one when a later pass makes it."""
    tainted = carries(node.taints, want.taint)
    if want.present != tainted:
        return QUARANTINE if want.present else RELEASE
    return REWRITE


class HealthState:
    """Every node's timers and the quarantined set; observe() is one pass."""

    def __init__(self, policy: NodeHealthPolicy) -> None:
        self.policy = policy
        self.quarantined: dict[str, Quarantined] = {}
        self._bad_since: dict[tuple[str, str], float] = {}  # (node, reason) -> run start
        self._known: set[str] = set()  # nodes read from their taints already

    def observe(self, now: float, wall: float, listing: Listing, bad: BadNodes | None) -> Outcome:
        """One pass at monotonic `now` / unix `wall`; `bad` None when some query failed."""
        pools = {node.name: pool for pool, nodes in listing.items() for node in nodes}
        views = {node.name: node for nodes in listing.values() for node in nodes}
        self._forget(set(pools))
        for name, entry in self.quarantined.items():
            entry.pool = pools[name]  # relabelled into another pool: counts against that one
        for name in sorted(pools):
            if name not in self._known:
                self._adopt(views[name], pools[name], wall)
        counts = {pool.name: len(listing.get(pool.name, ())) for pool in self.policy.pools}
        caps = {
            pool.name: self.policy.cap.pool_cap(counts[pool.name], pool.max_nodes)
            for pool in self.policy.pools
        }
        if bad is None:
            # hold: no changes, and the failed query counts as "not seen" everywhere.
            self._bad_since.clear()
            for entry in self.quarantined.values():
                entry.good_since = None
            return Outcome(queried=False, pool_nodes=counts, pool_caps=caps)
        seen = {reason: bad.get(reason, frozenset()) & pools.keys() for reason in self.policy.reasons}
        self._step_timers(now, pools, seen)
        released = self._releases(now, seen)
        candidates = self._admit(self._due(now, pools), counts, caps, wall)
        held: dict[str, int] = dict.fromkeys(counts, 0)
        for candidate in candidates:
            held[candidate.pool] += not candidate.admitted
        changes = []
        for name in sorted(views):
            want = self.want(name)
            if not want.converged(views[name]):
                changes.append(Change(views[name], _action(views[name], want), want))
        return Outcome(
            True,
            tuple(changes),
            tuple(candidates),
            tuple(released),
            counts,
            caps,
            held,
            {reason: len(nodes) for reason, nodes in seen.items()},
        )

    def want(self, node: str) -> Want:
        """What the node should carry: taint with the first reason and both annotations while
        quarantined, none of the three otherwise."""
        policy = self.policy
        entry = self.quarantined.get(node)
        if entry is None:
            return Want(
                policy.taint(), False, {policy.reason_annotation: None, policy.since_annotation: None}
            )
        notes = {
            policy.reason_annotation: ",".join(entry.reasons),
            policy.since_annotation: rfc3339(entry.since),
        }
        return Want(policy.taint(entry.reasons[0] if entry.reasons else ""), True, notes)

    def _forget(self, listed: set[str]) -> None:
        # A deleted node is read afresh if it comes back (it may come back tainted or not).
        self._known &= listed
        for name in [name for name in self.quarantined if name not in listed]:
            del self.quarantined[name]
        for key in [key for key in self._bad_since if key[0] not in listed]:
            del self._bad_since[key]

    def _adopt(self, node: NodeTaints, pool: str, wall: float) -> None:
        self._known.add(node.name)
        taint = self.policy.taint()
        if not carries(node.taints, taint):
            return
        noted = node.annotations.get(self.policy.reason_annotation, "")
        reasons = tuple(part for part in noted.split(",") if part)
        if not reasons:
            values = [t.get("value") or "" for t in node.taints if t.get("key") == taint.key]
            reasons = tuple(value for value in values[:1] if value)
        since = parse_rfc3339(node.annotations.get(self.policy.since_annotation))
        self.quarantined[node.name] = Quarantined(pool, reasons, wall if since is None else since)

    def _step_timers(self, now: float, pools: Mapping[str, str], seen: Mapping[str, frozenset[str]]) -> None:
        for name in pools:
            for reason in self.policy.reasons:
                start = run_start(self._bad_since.get((name, reason)), name in seen[reason], now)
                if start is None:
                    self._bad_since.pop((name, reason), None)
                else:
                    self._bad_since[(name, reason)] = start

    def _releases(
        self, now: float, seen: Mapping[str, frozenset[str]]
    ) -> list[tuple[str, Quarantined, float]]:
        released = []
        for name, entry in sorted(self.quarantined.items()):
            good = not any(name in nodes for nodes in seen.values())
            entry.good_since = run_start(entry.good_since, good, now)
            if entry.good_since is None:
                continue
            held = held_seconds(entry.good_since, now)
            if held >= self.policy.release_after_seconds:
                released.append((name, entry, held))
                del self.quarantined[name]
        return released

    def _due(self, now: float, pools: Mapping[str, str]) -> list[Due]:
        """(oldest bad start, node, pool, due reasons) of every node that qualifies, oldest
        first, ties by node name."""
        due = []
        for name, pool in pools.items():
            if name in self.quarantined:
                continue
            starts = {}
            for condition in self.policy.conditions:
                start = self._bad_since.get((name, condition.reason))
                if start is not None and held_seconds(start, now) >= condition.quarantine_after_seconds:
                    starts[condition.reason] = start
            if starts:
                reasons = tuple(r for r in self.policy.reasons if r in starts)
                due.append((min(starts.values()), name, pool, reasons))
        return sorted(due)

    def _admit(
        self, due: list[Due], counts: Mapping[str, int], caps: Mapping[str, int], wall: float
    ) -> list[Candidate]:
        fleet = len(self.quarantined)
        in_pool = dict.fromkeys(counts, 0)
        for entry in self.quarantined.values():
            in_pool[entry.pool] = in_pool.get(entry.pool, 0) + 1
        candidates = []
        for start, name, pool, reasons in due:
            fits = fleet + 1 <= self.policy.cap.max_nodes and in_pool[pool] + 1 <= caps[pool]
            if fits:
                fleet += 1
                in_pool[pool] += 1
                self.quarantined[name] = Quarantined(pool, reasons, wall)
            candidates.append(Candidate(name, pool, reasons, start, fits))
        return candidates
