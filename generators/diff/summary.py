"""What a change means in the terms people think in, read from the two models.

Capacity per pool, quota per team and flavor, priority tiers, overflow settings, health
quarantine (backend, watched pools, each pool's cap in nodes next to its reserve). Every
number comes from the model (generators.model): nothing is re-derived here, so the summary
can never disagree with what is rendered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from generators.diff.settings import health_caps, health_settings, overflow_settings
from generators.model.environment import Environment
from generators.model.types import Pool, Quota, Tier

T = TypeVar("T")
K = TypeVar("K")
Presence = Literal["added", "removed", "changed"]


@dataclass(frozen=True)
class Delta(Generic[T]):
    """A value before and after; None means absent (or, for limits, no limit)."""

    before: T | None
    after: T | None

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class PoolSummary:
    name: str
    presence: Presence
    role: str
    gpu_model: str
    gpu_resource: str
    nodes: Delta[int]
    reserve_nodes: Delta[int]
    schedulable_gpus: Delta[int]
    per_node: tuple[tuple[str, Delta[str]], ...]  # resources whose per-node amount changed

    @property
    def changed(self) -> bool:
        return (
            self.presence != "changed"
            or any(d.changed for d in (self.nodes, self.reserve_nodes, self.schedulable_gpus))
            or bool(self.per_node)
        )


@dataclass(frozen=True)
class QuotaSummary:
    team: str
    flavor: str
    resource: str
    is_gpu: bool
    nominal: Delta[str]  # canonical quantities, as rendered
    borrowing_limit: Delta[str]  # None: no limit (or, with presence added/removed, no cell)
    lending_limit: Delta[str]
    # "added": the team's queue did not have this flavor before (a new pool, team or
    # borrowFrom), so None before means "did not exist", never "no limit"
    presence: Presence = "changed"
    # the team's share of the pool (percent, 0 for a borrowFrom pool) and the schedulable
    # nodes it became: a share change reads "20% -> 25%, 50 -> 62 nodes", not just "400 -> 496"
    share: Delta[int] = Delta(None, None)
    nodes: Delta[int] = Delta(None, None)


@dataclass(frozen=True)
class TierSummary:
    name: str
    presence: Presence
    value: Delta[int]
    preemption_policy: Delta[str]


@dataclass(frozen=True)
class SettingSummary:
    """One overflow setting (providers, gate thresholds), by its label (diff/settings.py)."""

    label: str
    value: Delta[Any]


@dataclass(frozen=True)
class CapSummary:
    """A pool's quarantine cap (nodes at once; None: not watched) and its reserve."""

    pool: str
    cap: Delta[int]
    reserve: Delta[int]


@dataclass(frozen=True)
class EnvSummary:
    pools: tuple[PoolSummary, ...]
    quotas: tuple[QuotaSummary, ...]
    tiers: tuple[TierSummary, ...]
    overflow: tuple[SettingSummary, ...]
    health: tuple[SettingSummary, ...] = ()
    caps: tuple[CapSummary, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.pools or self.quotas or self.tiers or self.overflow or self.health or self.caps)


def _after_then_removed(old: Mapping[K, Any], new: Mapping[K, Any]) -> list[K]:
    """Keys in the order of the new side, then those only the old side has."""
    return [*new, *(key for key in old if key not in new)]


def _pair(before: object | None, after: object | None, attribute: str) -> Delta[Any]:
    """Delta of one attribute of the same thing on both sides (None where it is absent)."""
    return Delta(
        None if before is None else getattr(before, attribute),
        None if after is None else getattr(after, attribute),
    )


def _presence(before: object, after: object) -> Presence:
    return "added" if before is None else "removed" if after is None else "changed"


def _per_node(
    before: Environment | None, b: Pool | None, after: Environment | None, a: Pool | None
) -> tuple[tuple[str, Delta[str]], ...]:
    """Per-node amounts (cpu, memory, extras) that changed, canonical as in the queues."""
    if b is None or a is None or before is None or after is None:
        return ()
    kinds = {r.name: r for r in (*before.resources, *after.resources)}
    out = []
    for name in sorted(set(b.per_node) | set(a.per_node)):
        old, new = b.per_node.get(name), a.per_node.get(name)
        if old != new:
            out.append(
                (
                    name,
                    Delta(
                        None if old is None else kinds[name].show(old),
                        None if new is None else kinds[name].show(new),
                    ),
                )
            )
    return tuple(out)


def _pools(before: Environment | None, after: Environment | None) -> list[PoolSummary]:
    old = {p.name: p for p in before.pools} if before else {}
    new = {p.name: p for p in after.pools} if after else {}
    out = []
    for name in _after_then_removed(old, new):
        b, a = old.get(name), new.get(name)
        shown: Pool = a or b  # type: ignore[assignment]  # one side always exists
        row = PoolSummary(
            name,
            _presence(b, a),
            shown.role,
            shown.gpu_model,
            shown.gpu_resource,
            _pair(b, a, "nodes"),
            _pair(b, a, "reserve_nodes"),
            _pair(b, a, "schedulable_gpus"),
            _per_node(before, b, after, a),
        )
        if row.changed:
            out.append(row)
    return out


def _cells(env: Environment | None) -> dict[tuple[str, str, str], Quota]:
    """(team, flavor, resource) -> quota cell, in team, pool and coveredResources order."""
    if env is None:
        return {}
    return {
        (team, flavor.pool, q.resource.name): q
        for team, flavors in env.team_flavors.items()
        for flavor in flavors
        for q in flavor.quotas
    }


def _holdings(env: Environment | None) -> dict[tuple[str, str], tuple[int, int]]:
    """(team, flavor) -> (share percent, schedulable nodes it became), from the model."""
    if env is None:
        return {}
    shares = {t.name: t.shares for t in env.teams}
    return {
        (team, flavor.pool): (shares[team].get(flavor.pool, 0), flavor.nodes)
        for team, flavors in env.team_flavors.items()
        for flavor in flavors
    }


def _show(quota: Quota | None, field: Literal["nominal", "borrowing_limit", "lending_limit"]) -> str | None:
    if quota is None:
        return None
    amount = getattr(quota, field)
    return None if amount is None else quota.resource.show(amount)


def _quotas(before: Environment | None, after: Environment | None) -> list[QuotaSummary]:
    old, new = _cells(before), _cells(after)
    held_before, held_after = _holdings(before), _holdings(after)
    gpu_resources = {p.gpu_resource for env in (before, after) if env for p in env.pools}
    # A ClusterQueue covers every resource of its resource group on every flavor, so a pool
    # without a resource (an NVIDIA flavor in a queue that also holds amd.com/gpu) carries a
    # cell of 0 for it: it holds nothing there on either side, whatever else moved.
    offered = {
        (p.name, r) for env in (before, after) if env for p in env.pools for r, n in p.per_node.items() if n
    }
    out = []
    for key in _after_then_removed(old, new):
        if key[1:] not in offered:
            continue
        b, a = old.get(key), new.get(key)
        row = QuotaSummary(
            *key,
            key[2] in gpu_resources,
            Delta(_show(b, "nominal"), _show(a, "nominal")),
            Delta(_show(b, "borrowing_limit"), _show(a, "borrowing_limit")),
            Delta(_show(b, "lending_limit"), _show(a, "lending_limit")),
            _presence(b, a),
            *_held(held_before.get(key[:2]), held_after.get(key[:2])),
        )
        if (
            row.nominal.changed
            or row.borrowing_limit.changed
            or row.lending_limit.changed
            or row.share.changed
        ):
            out.append(row)
    return out


def _held(before: tuple[int, int] | None, after: tuple[int, int] | None) -> tuple[Delta[int], Delta[int]]:
    return (Delta(before and before[0], after and after[0]), Delta(before and before[1], after and after[1]))


def _tiers(before: Environment | None, after: Environment | None) -> list[TierSummary]:
    old = {t.name: t for t in before.tiers} if before else {}
    new = {t.name: t for t in after.tiers} if after else {}
    out = []
    for name in _after_then_removed(old, new):
        b: Tier | None = old.get(name)
        a: Tier | None = new.get(name)
        row = TierSummary(name, _presence(b, a), _pair(b, a, "value"), _pair(b, a, "preemption_policy"))
        if row.presence != "changed" or row.value.changed or row.preemption_policy.changed:
            out.append(row)
    return out


def _changed_settings(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[SettingSummary]:
    """The settings (label -> value) whose value differs, in the new side's order."""
    return [
        SettingSummary(label, Delta(old.get(label), new.get(label)))
        for label in _after_then_removed(old, new)
        if old.get(label) != new.get(label)
    ]


def _overflow(before: Environment | None, after: Environment | None) -> list[SettingSummary]:
    return _changed_settings(overflow_settings(before), overflow_settings(after))


def _health(before: Environment | None, after: Environment | None) -> list[SettingSummary]:
    return _changed_settings(health_settings(before), health_settings(after))


def _caps(before: Environment | None, after: Environment | None) -> list[CapSummary]:
    """Pools whose cap changed, or that became watched or unwatched (reserve shown beside)."""
    old, new = health_caps(before), health_caps(after)
    out = []
    for pool in _after_then_removed(old, new):
        b, a = old.get(pool), new.get(pool)
        row = CapSummary(pool, _pair(b, a, "cap"), _pair(b, a, "reserve"))
        if row.cap.changed:
            out.append(row)
    return out


def summarize(before: Environment | None, after: Environment | None) -> EnvSummary:
    """What changed between two models of one environment (None: the side has no such env)."""
    return EnvSummary(
        tuple(_pools(before, after)),
        tuple(_quotas(before, after)),
        tuple(_tiers(before, after)),
        tuple(_overflow(before, after)),
        tuple(_health(before, after)),
        tuple(_caps(before, after)),
    )
