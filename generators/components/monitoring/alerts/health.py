"""Health alerts (backend trainyard): one per quarantine condition, running the very query the
controller runs with `for:` = its quarantineAfterSeconds, so promtool tests the edges the
controller acts on; a quarantined node not released after the cool-down; the cap holding a
quarantine back; more nodes quarantined than a pool's reserve (quota promises GPUs that are
not there: run the inventory sync); and the controller down, without a leader, blind or
failing. Series of the controller carry job/namespace of its Service (ServiceMonitor
gpu-health); runbooks are sections of docs/health.md (health.runbookUrlPattern).
"""

from __future__ import annotations

from generators.components.monitoring.alerts import controllers
from generators.components.monitoring.alerts.rule import Alert, Rule, context, evaluate
from generators.components.monitoring.promql import Queries, labelled_union
from generators.model.health import Condition
from generators.promql.vocabulary import target_down

DOWN_FOR = "5m"  # several scrape intervals and a pod restart
HOLD_PASSES = 2  # a candidate held back on two passes in a row is not a race with a release


def prometheus_duration(seconds: int) -> str:
    """A Prometheus duration for whole seconds: 300 -> 5m, 90 -> 90s, 3600 -> 1h."""
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def condition(cond: Condition) -> Alert:
    """The row of one quarantine condition: its query, its duration, and what acts on it."""
    after = cond.quarantine_after_seconds
    return Alert(
        cond.alert,
        lambda q: cond.query,
        for_=prometheus_duration(after) if after else "",
        severity="warning",
        labels={"reason": cond.reason},
        facts={
            "bad": cond.summary,
            "held": f"for {prometheus_duration(after)}" if after else "once",
            "acts": (
                f"the health controller quarantines it (taint trainyard.dev/gpu-health={cond.reason}) "
                "unless the cap holds it back"
                if cond.enabled
                else f"health.conditions.{cond.spec_key} is disabled: nobody quarantines it"
            ),
        },
        summary="Node {labels.node}: {bad} {held}.",
        description=(
            "Node {labels.node} has shown {bad} on every evaluation {held}: {acts}. Training "
            "moves off it; inference keeps it. Have the node repaired or replaced "
            "(docs/health.md)."
        ),
    )


def _not_released(q: Queries) -> str:
    bad = " or ".join(f"({c.query})" for c in q.quarantine.active_conditions)
    quarantined = f"max by (node, pool) ({q.health_controller('trainyard_health_quarantined')})"
    return f"{quarantined} unless on (node) ({bad})" if bad else quarantined


def _exceeds_reserve(q: Queries) -> str:
    reserves = labelled_union("pool", {p.name: f"vector({p.reserve_nodes})" for p in q.quarantine.pools})
    count = f"count by (pool) {q.quarantined_nodes}"
    return f"{count} > on (pool) ({reserves})"


def _blind_after(q: Queries) -> int:
    return q.blind_after_seconds(q.quarantine.reconcile_interval_seconds)


def _blind(q: Queries) -> str:
    last = q.health_controller("trainyard_health_last_success_timestamp_seconds")
    return f"time() - max({last}) > {_blind_after(q)}"


RULES = (
    Alert(
        "GpuHealthNotReleased",
        _not_released,
        for_="{release_wait}",
        severity="warning",
        summary="Node {labels.node} is still quarantined although healthy for {release_wait}.",
        description=(
            "Node {labels.node} of pool {labels.pool} has been bad for no reason for "
            "{release_wait} (releaseAfterSeconds {c.release_after_seconds} plus two passes) and "
            "still carries the quarantine taint: the controller is not releasing. Check its log "
            "and trainyard_health_errors_total."
        ),
    ),
    Alert(
        "GpuHealthCapHoldsBack",
        lambda q: f"max by (pool) ({q.health_controller('trainyard_health_held_back')}) > 0",
        for_="{hold_wait}",
        severity="warning",
        summary="The quarantine cap holds back {value} bad nodes of pool {labels.pool}.",
        description=(
            "{value} nodes of pool {labels.pool} qualify for quarantine but the cap (maxNodes "
            "{c.cap.max_nodes}, maxPercentOfPool {c.cap.max_percent_of_pool}%) refuses: either "
            "many nodes really went bad at once, or an exporter or a query is wrong. Look before "
            "raising the cap."
        ),
    ),
    Alert(
        "GpuHealthQuarantineExceedsReserve",
        _exceeds_reserve,
        severity="warning",
        summary="{value} nodes of pool {labels.pool} are quarantined, more than its reserve.",
        description=(
            "{value} nodes of pool {labels.pool} are quarantined, more than its reserveNodes: "
            "Kueue's quota promises GPUs that do not exist and gangs will be admitted that cannot "
            "start. Run the inventory sync (generate.py sync-inventory) so the quota follows the "
            "nodes that can take work."
        ),
    ),
    Alert(
        "GpuHealthControllerDown",
        lambda q: target_down(q.health_controller("up")),
        for_="{down_for}",
        severity="warning",
        summary="The GPU health controller is down or not scraped.",
        description=(
            "Prometheus has not scraped the gpu-health controller for {down_for}: no node is "
            "quarantined or released, and its other alerts are blind."
        ),
    ),
    controllers.no_leader(
        "GpuHealthNoLeader",
        controllers.HEALTH,
        lambda q: q.health_controller("trainyard_health_leader"),
        "quarantines and releases wait",
    ),
    Alert(
        "GpuHealthBlind",
        _blind,
        severity="warning",
        summary="The GPU health controller has had no successful pass for over {blind}s.",
        description=(
            "No pass of the gpu-health controller has had every condition query succeed for more "
            "than {blind}s: it holds every node as it is (onPrometheusUnavailable hold), so bad "
            "nodes are not quarantined and healed ones not released. Check "
            "trainyard_health_query_success, Prometheus and the exporters."
        ),
    ),
    Alert(
        "GpuHealthErrors",
        lambda q: q.failing(q.health_controller("trainyard_health_errors_total")),
        severity="warning",
        summary="The GPU health controller failed at stage {labels.stage} in the last "
        "{a.controller_error_window}.",
        description=(
            "The gpu-health controller counted {value} failures at stage {labels.stage} in "
            "{a.controller_error_window}. The node taints may not be what it decided: "
            "trainyard_health_quarantined shows what is on the nodes; its log carries the API "
            "server's message."
        ),
    ),
)


def rules(q: Queries) -> list[Rule]:
    """Nothing without the built-in backend (NVSentinel alerts on itself)."""
    health = q.env.health
    if health is None or health.controller is None:
        return []
    c = health.controller
    facts = context(
        q,
        c=c,
        release_wait=prometheus_duration(
            c.release_after_seconds + HOLD_PASSES * c.reconcile_interval_seconds
        ),
        hold_wait=prometheus_duration(HOLD_PASSES * c.reconcile_interval_seconds),
        down_for=DOWN_FOR,
        blind=_blind_after(q),
    )
    return evaluate([*(condition(cond) for cond in c.conditions), *RULES], q, health, facts)
