"""Health alerts (backend trainyard): one per quarantine condition, running the very query the
controller runs with `for:` = its quarantineAfterSeconds, so promtool tests the edges the
controller acts on; a quarantined node not released after the cool-down; the cap holding a
quarantine back; more nodes quarantined than a pool's reserve (quota promises GPUs that are
not there: run the inventory sync); and the controller down, without a leader, blind or
failing. Series of the controller carry job/namespace of its Service (ServiceMonitor
gpu-health); runbooks are sections of docs/health.md (health.runbookUrlPattern).
"""

from __future__ import annotations

from generators.components.monitoring.alerts.rule import VALUE, Rule, alert, label
from generators.components.monitoring.promql import Queries, labelled_union
from generators.model.health import Condition, Controller, Health
from generators.model.promql import target_down

DOWN_FOR = "5m"  # several scrape intervals and a pod restart
HOLD_PASSES = 2  # a candidate held back on two passes in a row is not a race with a release


def duration(seconds: int) -> str:
    """A Prometheus duration for whole seconds: 300 -> 5m, 90 -> 90s, 3600 -> 1h."""
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


class HealthRules:
    def __init__(self, q: Queries, health: Health, c: Controller) -> None:
        self.q, self.health, self.c = q, health, c
        self.a = q.m.alerts  # the thresholds of the controllers' own alerts among them

    def metric(self, name: str, *extra: str) -> str:
        return self.q.health_controller(name, *extra)

    def condition(self, cond: Condition) -> Rule:
        after = cond.quarantine_after_seconds
        held = f"for {duration(after)}" if after else "once"
        acts = (
            "the health controller quarantines it (taint trainyard.dev/gpu-health="
            f"{cond.reason}) unless the cap holds it back"
            if cond.enabled
            else f"health.conditions.{cond.spec_key} is disabled: nobody quarantines it"
        )
        return alert(
            self.health,
            cond.alert,
            cond.query,
            for_=duration(after) if after else None,
            severity="warning",
            labels={"reason": cond.reason},
            summary=f"Node {label('node')}: {cond.summary} {held}.",
            description=(
                f"Node {label('node')} has shown {cond.summary} on every evaluation {held}: "
                f"{acts}. Training moves off it; inference keeps it. Have the node repaired "
                "or replaced (docs/health.md)."
            ),
        )

    def not_released(self) -> Rule:
        wait = self.c.release_after_seconds + HOLD_PASSES * self.c.reconcile_interval_seconds
        bad = " or ".join(f"({c.query})" for c in self.c.active_conditions)
        quarantined = f"max by (node, pool) ({self.metric('trainyard_health_quarantined')})"
        return alert(
            self.health,
            "GpuHealthNotReleased",
            f"{quarantined} unless on (node) ({bad})" if bad else quarantined,
            for_=duration(wait),
            severity="warning",
            summary=f"Node {label('node')} is still quarantined although healthy for {duration(wait)}.",
            description=(
                f"Node {label('node')} of pool {label('pool')} has been bad for no reason for "
                f"{duration(wait)} (releaseAfterSeconds {self.c.release_after_seconds} plus two "
                "passes) and still carries the quarantine taint: the controller is not "
                "releasing. Check its log and trainyard_health_errors_total."
            ),
        )

    def cap_holds_back(self) -> Rule:
        wait = HOLD_PASSES * self.c.reconcile_interval_seconds
        return alert(
            self.health,
            "GpuHealthCapHoldsBack",
            f"max by (pool) ({self.metric('trainyard_health_held_back')}) > 0",
            for_=duration(wait),
            severity="warning",
            summary=f"The quarantine cap holds back {VALUE} bad nodes of pool {label('pool')}.",
            description=(
                f"{VALUE} nodes of pool {label('pool')} qualify for quarantine but the cap "
                f"(maxNodes {self.c.cap.max_nodes}, maxPercentOfPool "
                f"{self.c.cap.max_percent_of_pool}%) refuses: either many nodes really went "
                "bad at once, or an exporter or a query is wrong. Look before raising the cap."
            ),
        )

    def exceeds_reserve(self) -> Rule:
        reserves = labelled_union("pool", {p.name: f"vector({p.reserve_nodes})" for p in self.c.pools})
        count = f"count by (pool) ({self.metric('trainyard_health_quarantined')} == 1)"
        return alert(
            self.health,
            "GpuHealthQuarantineExceedsReserve",
            f"{count} > on (pool) ({reserves})",
            severity="warning",
            summary=f"{VALUE} nodes of pool {label('pool')} are quarantined, more than its reserve.",
            description=(
                f"{VALUE} nodes of pool {label('pool')} are quarantined, more than its "
                "reserveNodes: Kueue's quota promises GPUs that do not exist and gangs will "
                "be admitted that cannot start. Run the inventory sync (generate.py "
                "sync-inventory) so the quota follows the nodes that can take work."
            ),
        )

    def down(self) -> Rule:
        up = self.metric("up")
        return alert(
            self.health,
            "GpuHealthControllerDown",
            target_down(up),
            for_=DOWN_FOR,
            severity="warning",
            summary="The GPU health controller is down or not scraped.",
            description=(
                f"Prometheus has not scraped the gpu-health controller for {DOWN_FOR}: no "
                "node is quarantined or released, and its other alerts are blind."
            ),
        )

    def no_leader(self) -> Rule:
        after = self.a.controller_no_leader_for
        return alert(
            self.health,
            "GpuHealthNoLeader",
            self.q.no_leader(self.metric("trainyard_health_leader")),
            for_=after,
            severity="warning",
            summary="No GPU health controller holds the Lease.",
            description=(
                f"No gpu-health process has acted for {after}: quarantines and releases "
                "wait. Check the gpu-health pods and their log (lease attempt failed)."
            ),
        )

    def blind(self) -> Rule:
        limit = self.q.blind_after_seconds(self.c.reconcile_interval_seconds)
        last = self.metric("trainyard_health_last_success_timestamp_seconds")
        return alert(
            self.health,
            "GpuHealthBlind",
            f"time() - max({last}) > {limit}",
            severity="warning",
            summary=f"The GPU health controller has had no successful pass for over {limit}s.",
            description=(
                f"No pass of the gpu-health controller has had every condition query succeed for "
                f"more than {limit}s: it holds every node as it is (onPrometheusUnavailable "
                "hold), so bad nodes are not quarantined and healed ones not released. Check "
                "trainyard_health_query_success, Prometheus and the exporters."
            ),
        )

    def errors(self) -> Rule:
        failures = self.metric("trainyard_health_errors_total")
        window = self.a.controller_error_window
        return alert(
            self.health,
            "GpuHealthErrors",
            self.q.failing(failures),
            severity="warning",
            summary=f"The GPU health controller failed at stage {label('stage')} in the last {window}.",
            description=(
                f"The gpu-health controller counted {VALUE} failures at stage {label('stage')} in "
                f"{window}. The node taints may not be what it decided: "
                "trainyard_health_quarantined shows what is on the nodes; its log carries the "
                "API server's message."
            ),
        )


def rules(q: Queries) -> list[Rule]:
    """Nothing without the built-in backend (NVSentinel alerts on itself)."""
    health = q.env.health
    if health is None or health.controller is None:
        return []
    r = HealthRules(q, health, health.controller)
    return [
        *(r.condition(c) for c in health.controller.conditions),
        r.not_released(),
        r.cap_holds_back(),
        r.exceeds_reserve(),
        r.down(),
        r.no_leader(),
        r.blind(),
        r.errors(),
    ]
