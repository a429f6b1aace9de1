"""Quarantine (backend trainyard): nodes quarantined per pool and reason, how long each has
been out, the cap's headroom and what it held back, and the controller's own health. Reads
the controller's metrics (docs/health.md); rendered only with the built-in backend."""

from __future__ import annotations

from generators.components.monitoring.dashboards import panels as g
from generators.components.monitoring.promql import Queries


def quarantined(q: Queries) -> list[g.Panel]:
    in_quarantine = q.quarantined_nodes
    since = q.health_controller("trainyard_health_quarantined_since_seconds")
    return [
        g.graph(
            "Quarantined nodes per pool and reason",
            "Nodes carrying trainyard.dev/gpu-health, by pool and by the taint value (the first "
            "reason in spec order). Training stays off them; inference may use them.",
            [g.Query(f"count by (pool, reason) {in_quarantine}", "{{pool}} {{reason}}")],
            stacked=True,
            span=18,
        ),
        g.count("Quarantined now", "All pools.", in_quarantine),
        g.grid(
            "Time in quarantine",
            "Per quarantined node: time since its quarantine (the "
            "trainyard.dev/gpu-health-since annotation). A node out for days needs its repair chased.",
            [g.Query(f"time() - max by (node, pool, reason) ({since})")],
            ["in quarantine"],
            unit="s",
            span=24,
        ),
    ]


def cap(q: Queries) -> list[g.Panel]:
    in_quarantine = q.quarantined_nodes
    pool_cap = f"max by (pool) ({q.health_controller('trainyard_health_cap')})"
    fleet_cap = f"max({q.health_controller('trainyard_health_cap_fleet')})"
    used = f"(count by (pool) {in_quarantine} or {pool_cap} * 0)"
    held = q.health_controller("trainyard_health_held_back")
    bad = q.health_controller("trainyard_health_bad_nodes")
    return [
        g.graph(
            "Cap headroom",
            "Nodes each pool may still lose to quarantine (floor(maxPercentOfPool x nodes / 100) minus "
            "quarantined), and the fleet's (maxNodes minus all quarantined). At 0 the next bad node "
            "is held back.",
            [
                g.Query(f"{pool_cap} - on (pool) {used}", "{{pool}}"),
                g.Query(f"{fleet_cap} - (count{in_quarantine} or vector(0))", "fleet"),
            ],
            span=12,
        ),
        g.gauge_by(
            "Held back by the cap",
            "Nodes that qualify for quarantine now but the cap refused (GpuHealthCapHoldsBack).",
            held,
            "pool",
            span=12,
        ),
        g.gauge_by(
            "Bad nodes per condition",
            "Pool nodes each condition query returned on the last good pass, quarantined or not.",
            bad,
            "reason",
            span=24,
        ),
    ]


def controller(q: Queries) -> list[g.Panel]:
    patches = q.health_controller("trainyard_health_node_patches_total")
    errors = q.health_controller("trainyard_health_errors_total")
    return [
        g.increase_by(
            "Node patches",
            "Quarantines, releases and rewrites of the taint value.",
            patches,
            "action",
            span=8,
        ),
        g.increase_by("Errors by stage", "GpuHealthErrors.", errors, "stage", span=8),
        g.graph(
            "Queries succeeding and leader",
            "1 = the last pass had every condition query succeed; 1 = this pod holds the Lease.",
            [
                g.Query(f"min({q.health_controller('trainyard_health_query_success')})", "queries ok"),
                g.Query(f"sum({q.health_controller('trainyard_health_leader')})", "leaders"),
            ],
            span=8,
        ),
    ]


DASHBOARD = g.Dashboard(
    "quarantine",
    "Quarantine",
    "Self-healing GPU nodes: who is quarantined and why, for how long, and how much "
    "room the blast-radius cap has left.",
    rows=(("Quarantined nodes", quarantined), ("Cap", cap), ("Controller", controller)),
)
