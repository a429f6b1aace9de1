"""Quotas from inventory: the one place capacity turns into ClusterQueue numbers.

Per pool, the schedulable nodes (nodes - reserveNodes) are split among the teams that have
a share of it, in WHOLE NODES, by largest-remainder apportionment of the shares. A team's
nominalQuota of every resource is then its node count x the pool's per-node amount.
Consequences, all tested:
- per pool and resource, the nominal quotas of all ClusterQueues sum to exactly the
  pool's capacity: never more (admitted gangs that cannot be placed, the talk's pain) and
  never less (GPUs nobody may use);
- quotas come in whole nodes, the unit gangs are placed in, so CPU and memory are always
  in proportion to GPUs;
- change a node count and every dependent quota follows.

Which pools a team's queues list is written in the spec, never implied by a cohort: the pools
it holds a share of, plus `borrowFrom` (pools it may borrow through its cohort with a nominal
quota of 0). The flavors are then split into ClusterQueues by placement (see ClusterQueue).
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

from generators.model.apportion import largest_remainder
from generators.model.teams import flex_queue
from generators.model.types import ClusterQueue, FlavorQuota, Pool, Quota, ResourceKind, Team


def apportion_nodes(pool: Pool, teams: tuple[Team, ...]) -> dict[str, int]:
    """Schedulable nodes of `pool` owned by each team (keyed by team name)."""
    ordered = sorted(teams, key=lambda t: t.name)  # ties go by name: independent of file order
    parts = largest_remainder(pool.schedulable_nodes, [t.shares.get(pool.name, 0) for t in ordered])
    return {t.name: n for t, n in zip(ordered, parts, strict=True)}


def build_queues(
    pools: tuple[Pool, ...], teams: tuple[Team, ...], resources: tuple[ResourceKind, ...]
) -> dict[str, tuple[FlavorQuota, ...]]:
    """team -> flavors (pool order) with a Quota per covered resource."""
    nodes = {p.name: apportion_nodes(p, teams) for p in pools}
    queues: dict[str, tuple[FlavorQuota, ...]] = {}
    for team in teams:
        reachable = set(team.shares) | set(team.borrow_from)
        flavors = []
        for pool in pools:
            if pool.name not in reachable:
                continue
            own = nodes[pool.name][team.name]
            borrow = _borrowable_nodes(team, pool, own)
            lend = None if team.lendable_percent is None else own * team.lendable_percent // 100
            cells: tuple[Quota, ...] = tuple(
                Quota(
                    r,
                    own * pool.per_node.get(r.name, Fraction(0)),
                    _times(borrow, pool, r),
                    _times(lend, pool, r),
                )
                for r in resources
            )
            flavors.append(FlavorQuota(pool.name, own, cells))
        queues[team.name] = tuple(flavors)
    return queues


def _times(nodes: int | None, pool: Pool, resource: ResourceKind) -> Fraction | None:
    return None if nodes is None else nodes * pool.per_node.get(resource.name, Fraction(0))


def _borrowable_nodes(team: Team, pool: Pool, own: int) -> int | None:
    """maxUsagePercent caps own + borrowed nodes; the borrowing limit is what is left."""
    if team.max_usage_percent is None:
        return None
    ceiling = pool.schedulable_nodes * team.max_usage_percent // 100
    return max(0, ceiling - own)


def split_by_placement(
    team: Team, flavors: tuple[FlavorQuota, ...], pools: tuple[Pool, ...]
) -> tuple[ClusterQueue, ...]:
    """A team's flavors as ClusterQueues whose flavors all have a topology or all lack one."""
    topology = {p.name for p in pools if p.topology_levels}
    tas = tuple(f for f in flavors if f.pool in topology)
    plain = tuple(f for f in flavors if f.pool not in topology)
    queues = []
    if tas:
        queues.append(ClusterQueue(team.name, team.name, True, tas))
    if plain:
        queues.append(ClusterQueue(flex_queue(team.name) if tas else team.name, team.name, False, plain))
    return tuple(queues)


HOSTNAME = "kubernetes.io/hostname"


def preferred_level(pools: Iterable[Pool]) -> str | None:
    """The level a class-less gang of one topology queue holding `pools` should prefer: the
    topmost level their topologies share (a gang then takes as few blocks, then racks, as
    fit). None when the pools' levels differ (one annotation names one level for every
    flavor the queue may try) or the only level is the host."""
    levels = {p.topology_levels for p in pools}
    if len(levels) != 1:
        return None
    (shared,) = levels
    return shared[0] if shared and shared[0] != HOSTNAME else None
