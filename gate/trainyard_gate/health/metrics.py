"""The health controller's series (trainyard_health_*: names fixed by the health contract,
gate/README.md; the rendered alerts read them); label sets exist from start-up at 0."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry

from ..runtime.metrics import ControllerMetrics
from .state import QUARANTINE, RELEASE, REWRITE

PREFIX = "trainyard_health"
ACTIONS = (QUARANTINE, RELEASE, REWRITE)


class HealthMetrics(ControllerMetrics):
    def __init__(
        self, pools: Iterable[str], reasons: Iterable[str], registry: CollectorRegistry | None = None
    ) -> None:
        super().__init__(
            PREFIX,
            "Failures by stage: query (Prometheus), nodes (Kubernetes API), pass (anything "
            "else, survived), election (the Lease)",
            registry,
        )
        node_labels = ["node", "pool", "reason"]
        self.quarantined = self.gauge(
            "quarantined",
            "1 per node the controller holds quarantined (reason: the taint value)",
            node_labels,
        )
        self.quarantined_since = self.gauge(
            "quarantined_since_seconds", "Unix time the node was quarantined", node_labels
        )
        self.held_back = self.gauge(
            "held_back", "Nodes that qualify for quarantine now but the cap refused", ["pool"]
        )
        self.cap = self.gauge(
            "cap", "The pool's cap in nodes now: floor(maxPercentOfPool x pool nodes / 100)", ["pool"]
        )
        self.cap_fleet = self.gauge("cap_fleet", "maxNodes: quarantined nodes allowed in all pools")
        self.pool_nodes = self.gauge(
            "pool_nodes", "Nodes the pool's selector matched at the last read", ["pool"]
        )
        self.bad_nodes = self.gauge(
            "bad_nodes", "Pool nodes the last successful query of the condition returned", ["reason"]
        )
        self.query_success = self.gauge(
            "query_success", "1 if every condition query of the last pass succeeded, else 0"
        )
        self.last_success = self.gauge(
            "last_success_timestamp_seconds", "Unix time of the last pass whose queries all succeeded"
        )
        self.node_patches = self.counter(
            "node_patches", "Node changes made (or, in dry run, that would have been made)", ["action"]
        )
        for action in ACTIONS:
            self.node_patches.labels(action=action)
        for pool in pools:
            self.held_back.labels(pool=pool)
        for reason in reasons:
            self.bad_nodes.labels(reason=reason)
