"""Quarantine (backend trainyard): nodes quarantined per pool and reason, how long each has
been out, the cap's headroom and what it held back, and the controller's own health. Reads
the controller's metrics (docs/health.md); rendered only with the built-in backend."""

from __future__ import annotations

from typing import Any

from generators.components.monitoring.dashboards.panels import Board, Panel, Query, graph, grid, single
from generators.components.monitoring.promql import Queries
from generators.model.environment import Environment

SLUG = "quarantine"


def quarantined(q: Queries) -> list[Panel]:
    in_quarantine = f"({q.health_controller('trainyard_health_quarantined')} == 1)"
    since = q.health_controller("trainyard_health_quarantined_since_seconds")
    return [
        graph(
            "Quarantined nodes per pool and reason",
            "Nodes carrying trainyard.dev/gpu-health, by pool and by the taint value (the first "
            "reason in spec order). Training stays off them; inference may use them.",
            "none",
            [Query(f"count by (pool, reason) {in_quarantine}", "{{pool}} {{reason}}")],
            stacked=True,
            span=18,
        ),
        single(
            "Quarantined now", "All pools.", "none", Query(f"count({in_quarantine}) or vector(0)"), span=6
        ),
        grid(
            "Time in quarantine",
            "Per quarantined node: time since its quarantine (the "
            "trainyard.dev/gpu-health-since annotation). A node out for days needs its repair chased.",
            "s",
            [Query(f"time() - max by (node, pool, reason) ({since})")],
            ["in quarantine"],
            span=24,
        ),
    ]


def cap(q: Queries) -> list[Panel]:
    in_quarantine = f"({q.health_controller('trainyard_health_quarantined')} == 1)"
    pool_cap = f"max by (pool) ({q.health_controller('trainyard_health_cap')})"
    fleet_cap = f"max({q.health_controller('trainyard_health_cap_fleet')})"
    used = f"(count by (pool) {in_quarantine} or {pool_cap} * 0)"
    held = q.health_controller("trainyard_health_held_back")
    bad = q.health_controller("trainyard_health_bad_nodes")
    return [
        graph(
            "Cap headroom",
            "Nodes each pool may still lose to quarantine (floor(maxPercentOfPool x nodes / 100) minus "
            "quarantined), and the fleet's (maxNodes minus all quarantined). At 0 the next bad node "
            "is held back.",
            "none",
            [
                Query(f"{pool_cap} - on (pool) {used}", "{{pool}}"),
                Query(f"{fleet_cap} - (count{in_quarantine} or vector(0))", "fleet"),
            ],
            span=12,
        ),
        graph(
            "Held back by the cap",
            "Nodes that qualify for quarantine now but the cap refused (GpuHealthCapHoldsBack).",
            "none",
            [Query(f"max by (pool) ({held})", "{{pool}}")],
            span=12,
        ),
        graph(
            "Bad nodes per condition",
            "Pool nodes each condition query returned on the last good pass, quarantined or not.",
            "none",
            [Query(f"max by (reason) ({bad})", "{{reason}}")],
            span=24,
        ),
    ]


def controller(q: Queries) -> list[Panel]:
    patches = q.health_controller("trainyard_health_node_patches_total")
    errors = q.health_controller("trainyard_health_errors_total")
    return [
        graph(
            "Node patches",
            "Quarantines, releases and rewrites of the taint value.",
            "none",
            [Query(f"sum by (action) (increase({patches}[$__rate_interval]))", "{{action}}")],
            span=8,
        ),
        graph(
            "Errors by stage",
            "GpuHealthErrors.",
            "none",
            [Query(f"sum by (stage) (increase({errors}[$__rate_interval]))", "{{stage}}")],
            span=8,
        ),
        graph(
            "Queries succeeding and leader",
            "1 = the last pass had every condition query succeed; 1 = this pod holds the Lease.",
            "none",
            [
                Query(f"min({q.health_controller('trainyard_health_query_success')})", "queries ok"),
                Query(f"sum({q.health_controller('trainyard_health_leader')})", "leaders"),
            ],
            span=8,
        ),
    ]


def build(env: Environment) -> dict[str, Any]:
    q = Queries(env)
    board = Board(
        q.m,
        SLUG,
        "Quarantine",
        "Self-healing GPU nodes: who is quarantined and why, for how long, and how much "
        "room the blast-radius cap has left.",
    )
    board.row("Quarantined nodes", *quarantined(q))
    board.row("Cap", *cap(q))
    board.row("Controller", *controller(q))
    return board.build()
