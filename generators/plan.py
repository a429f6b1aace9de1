"""`plan ENV`: the capacity and queue tables of one environment, for humans.

Every number is read from the model (generators.model), never recomputed here, so the
plan shows exactly what `render` writes into the ClusterQueues.
"""

from __future__ import annotations

from fractions import Fraction

from generators.model.types import Environment, Quota
from generators.texttable import table

NO_LIMIT = "-"


def _limit(quota: Quota, amount: Fraction | None) -> str:
    return NO_LIMIT if amount is None else quota.resource.show(amount)


def _cell(quota: Quota) -> str:
    """`nominal / borrowing limit / lending limit`, canonical quantities as rendered."""
    return " / ".join((quota.resource.show(quota.nominal), _limit(quota, quota.borrowing_limit),
                       _limit(quota, quota.lending_limit)))


def pools(env: Environment) -> str:
    return table(
        ("pool", "role", "GPU model", "resource", "GPUs/node", "nodes", "reserve", "schedulable nodes",
         "schedulable GPUs"),
        [(p.name, p.role, p.gpu_model, p.gpu_resource, p.gpus_per_node, p.nodes, p.reserve_nodes,
          p.schedulable_nodes, p.schedulable_gpus) for p in env.pools])


def teams(env: Environment) -> str:
    header = ("team", "cohort", "flavor", "nodes", *(r.name for r in env.resources))
    rows = []
    for team in env.teams:
        for flavor in env.queues[team.name]:
            rows.append((team.name, team.cohort or NO_LIMIT, flavor.pool, flavor.nodes,
                         *(_cell(q) for q in flavor.quotas)))
    return table(header, rows)


def tiers(env: Environment) -> str:
    return table(("tier", "role", "priority", "preemption policy"),
                 [(t.name, t.role, t.value, t.preemption_policy)
                  for t in env.tiers])


def providers(env: Environment) -> str | None:
    """Overflow providers in fill order with their gate bands; None without overflow."""
    if env.overflow is None:
        return None
    rows = [(p.rank + 1, p.name, p.type, p.gpus, p.gpu_model, p.cost_per_gpu_hour_usd, p.max_usd_per_hour,
             f"< {p.band.open_when_free_gpus_below} for {p.band.open_after_seconds}s",
             f">= {p.band.close_when_free_gpus_at_least} for {p.band.close_after_seconds}s")
            for p in env.overflow.providers]
    gate = env.overflow.gate
    return (table(("order", "provider", "type", "GPUs", "GPU model", "USD/GPU-h", "max USD/h",
                   "gate opens (free GPUs)", "gate closes (free GPUs)"), rows)
            + f"\nfree GPUs = {gate.free_gpus_query}"
            f"\nPrometheus unavailable: {gate.on_prometheus_unavailable}; "
            f"reconcile every {gate.reconcile_interval_seconds}s; dry run: {str(gate.dry_run).lower()}")


def plan(env: Environment) -> str:
    parts = [
        f"{env.name}: {env.display_name} ({env.source_file}); {env.gpus} GPUs, "
        f"{env.schedulable_gpus} schedulable",
        "Pools\n" + pools(env),
        "Teams: nominal quota / borrowing limit / lending limit per flavor "
        f"('{NO_LIMIT}': no limit; CPU in cores, memory in bytes, canonical units)\n" + teams(env),
        "Priority tiers\n" + tiers(env),
    ]
    overflow = providers(env)
    if overflow:
        parts.append("Overflow: providers in fill order and their gate thresholds\n" + overflow)
    return "\n\n".join(parts) + "\n"
