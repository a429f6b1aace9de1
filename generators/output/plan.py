"""`plan ENV`: the capacity and queue tables of one environment, for humans.

Every number is read from the model (generators.model), never recomputed here, so the
plan shows exactly what `render` writes into the ClusterQueues. Tables fit 100 columns
(a terminal beside an editor): GPU quotas per team and flavor next to the share and the
nodes it became; CPU in cores and memory in Gi, with the unit in the header; long
expressions (the free-GPU PromQL) come last, wrapped.
"""

from __future__ import annotations

import textwrap
from fractions import Fraction

from generators.model.environment import Environment
from generators.model.types import Quota
from generators.output.texttable import table

NO_LIMIT = "-"
WIDTH = 100
GI = 1 << 30


def _limit(quota: Quota, amount: Fraction | None) -> str:
    return NO_LIMIT if amount is None else quota.resource.show(amount)


def _cell(quota: Quota) -> str:
    """`nominal / borrowing limit / lending limit`, canonical quantities as rendered."""
    return " / ".join(
        (
            quota.resource.show(quota.nominal),
            _limit(quota, quota.borrowing_limit),
            _limit(quota, quota.lending_limit),
        )
    )


def _number(value: Fraction) -> str:
    """A plain number (no `k` suffix: `6000`, not `6k`), one decimal when not whole."""
    return str(value.numerator) if value.denominator == 1 else f"{float(value):.1f}"


def cores(value: Fraction) -> str:
    return _number(value)


def gibibytes(value: Fraction) -> str:
    return _number(value / GI)


def pools(env: Environment) -> str:
    return table(
        ("pool", "role", "nodes", "reserve", "usable", "usable GPUs", "cores", "Gi", "GPUs/node"),
        [
            (
                p.name,
                p.role,
                p.nodes,
                p.reserve_nodes,
                p.schedulable_nodes,
                p.schedulable_gpus,
                cores(p.per_node["cpu"]),
                gibibytes(p.per_node["memory"]),
                f"{p.gpus_per_node} x {p.gpu_model}"
                + ("" if p.gpu_resource == "nvidia.com/gpu" else f" ({p.gpu_resource})"),
            )
            for p in env.pools
        ],
    )


def teams(env: Environment) -> str:
    """One row per flavor of each ClusterQueue, under the queue's name: the LocalQueue a job
    names (`kueue.x-k8s.io/queue-name`) is the same, so the row says which name reaches the
    pool (a team's plain pools are in `<team>-flex` when it also has topology pools)."""
    by_team = {t.name: t for t in env.teams}
    rows = []
    for queue in env.cluster_queues:
        team = by_team[queue.team]
        for flavor in queue.flavors:
            pool = env.pool(flavor.pool)
            cells = {q.resource.name: q for q in flavor.quotas}
            share = team.shares.get(flavor.pool)
            rows.append(
                (
                    queue.name,
                    team.cohort or NO_LIMIT,
                    flavor.pool,
                    f"{share}%" if share is not None else "borrow",
                    flavor.nodes,
                    _cell(cells[pool.gpu_resource]),
                    cores(cells["cpu"].nominal),
                    gibibytes(cells["memory"].nominal),
                )
            )
    return table(
        ("queue", "cohort", "flavor", "share", "nodes", "GPU quota/borrow/lend", "CPU (cores)", "mem (Gi)"),
        rows,
    )


def tiers(env: Environment) -> str:
    return table(
        ("tier", "role", "priority", "preemption policy"),
        [(t.name, t.role, t.value, t.preemption_policy) for t in env.tiers],
    )


def providers(env: Environment) -> str | None:
    """Overflow providers in fill order with their gate bands; None without overflow."""
    if env.overflow is None:
        return None
    rows = [
        (
            p.rank + 1,
            p.name,
            p.type,
            p.gpus,
            p.gpu_model,
            p.cost_per_gpu_hour_usd,
            p.max_usd_per_hour,
            f"< {p.band.open_when_free_gpus_below} for {p.band.open_after_seconds}s",
            f">= {p.band.close_when_free_gpus_at_least} for {p.band.close_after_seconds}s",
        )
        for p in env.overflow.providers
    ]
    gate = env.overflow.gate
    return (
        table(
            (
                "#",
                "provider",
                "type",
                "GPUs",
                "GPU model",
                "$/GPU-h",
                "max $/h",
                "opens (free)",
                "closes (free)",
            ),
            rows,
        )
        + f"\nPrometheus unavailable: {gate.on_prometheus_unavailable}; "
        f"reconcile every {gate.reconcile_interval_seconds}s; dry run: {str(gate.dry_run).lower()}"
        + "\nfree GPUs (PromQL):\n"
        + textwrap.fill(
            _breakable(gate.free_gpus_query),
            WIDTH,
            initial_indent="  ",
            subsequent_indent="    ",
            break_long_words=False,
            break_on_hyphens=False,
        )
    )


def health(env: Environment) -> str:
    """Who quarantines nodes and, with the built-in controller, how many of each watched pool
    it may take at once (the model's Cap.pool_cap) beside the pool's reserve."""
    h = env.health
    if h is None:
        return "backend none: no node is quarantined"
    taints = ", ".join(h.taint_keys) or NO_LIMIT
    c = h.controller
    if c is None:
        return f"backend {h.backend} (installed on its own); inference tolerates its taints:\n  {taints}"
    head = (
        f"backend trainyard (controller in {c.namespace}; dry run: {str(c.dry_run).lower()})\n"
        f"fleet cap {c.cap.max_nodes} node{'' if c.cap.max_nodes == 1 else 's'} at once; "
        "a pool without its own cap: "
        f"{c.cap.max_percent_of_pool}% of its nodes, at least 1"
    )
    rows = []
    for p in c.pools:
        cap = c.cap.pool_cap(p)
        note = "above reserve: takes quota" if cap > p.reserve_nodes else ""
        rows.append(
            (
                p.name,
                p.nodes,
                p.reserve_nodes,
                cap,
                "own" if c.cap.own(p) is not None else f"{c.cap.max_percent_of_pool}%",
                note,
            )
        )
    return (
        head + "\n" + table(("watched pool", "nodes", "reserve", "cap (nodes at once)", "cap from", ""), rows)
    )


def _breakable(promql: str) -> str:
    """A space after each comma outside string literals: PromQL ignores it, and it lets a
    long label matcher wrap without splitting a token."""
    out, quote = [], ""
    for i, ch in enumerate(promql):
        out.append(ch)
        if quote:
            quote = "" if ch == quote and promql[i - 1] != "\\" else quote
        elif ch in "\"'`":
            quote = ch
        elif ch == "," and promql[i + 1 : i + 2] not in (" ", ""):
            out.append(" ")
    return "".join(out)


def plan(env: Environment) -> str:
    extras = [
        r.name
        for r in env.resources
        if r.name not in {"cpu", "memory"} and r.name not in {p.gpu_resource for p in env.pools}
    ]
    parts = [
        f"{env.name}: {env.display_name} ({env.source_file}); {env.gpus} GPUs, "
        f"{env.schedulable_gpus} schedulable",
        "Pools (usable = nodes - reserve: what quotas are made of; per node: CPU cores, memory Gi, "
        "GPUs)\n" + pools(env),
        "Queues: the name a job gives as kueue.x-k8s.io/queue-name (a team's ClusterQueue and\n"
        "LocalQueue; its plain pools are in <team>-flex when it has topology pools), its share of\n"
        f"each pool, the schedulable nodes it became, GPU quota ('{NO_LIMIT}': no limit; 'borrow':\n"
        "borrowFrom, no share) and nominal CPU and memory, which follow the nodes"
        + (f" ({', '.join(extras)} too)" if extras else "")
        + "\n"
        + teams(env),
        "Priority tiers\n" + tiers(env),
        "Health quarantine\n" + health(env),
    ]
    overflow = providers(env)
    if overflow:
        parts.append("Overflow: providers in fill order and their gate thresholds\n" + overflow)
    return "\n\n".join(parts) + "\n"
