"""The health controller's series (trainyard_health_*: names fixed by the health contract,
gate/README.md; the rendered alerts read them); label sets exist from start-up at 0."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge

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
        reg, p = self.registry, PREFIX
        node_labels = ["node", "pool", "reason"]
        self.quarantined = Gauge(
            f"{p}_quarantined",
            "1 per node the controller holds quarantined (reason: the taint value)",
            node_labels,
            registry=reg,
        )
        self.quarantined_since = Gauge(
            f"{p}_quarantined_since_seconds", "Unix time the node was quarantined", node_labels, registry=reg
        )
        self.held_back = Gauge(
            f"{p}_held_back",
            "Nodes that qualify for quarantine now but the cap refused",
            ["pool"],
            registry=reg,
        )
        self.cap = Gauge(
            f"{p}_cap",
            "The pool's cap in nodes now: floor(maxPercentOfPool x pool nodes / 100)",
            ["pool"],
            registry=reg,
        )
        self.cap_fleet = Gauge(
            f"{p}_cap_fleet", "maxNodes: quarantined nodes allowed in all pools", registry=reg
        )
        self.pool_nodes = Gauge(
            f"{p}_pool_nodes", "Nodes the pool's selector matched at the last read", ["pool"], registry=reg
        )
        self.bad_nodes = Gauge(
            f"{p}_bad_nodes",
            "Pool nodes the last successful query of the condition returned",
            ["reason"],
            registry=reg,
        )
        self.query_success = Gauge(
            f"{p}_query_success",
            "1 if every condition query of the last pass succeeded, else 0",
            registry=reg,
        )
        self.last_success = Gauge(
            f"{p}_last_success_timestamp_seconds",
            "Unix time of the last pass whose queries all succeeded",
            registry=reg,
        )
        self.node_patches = Counter(
            f"{p}_node_patches",
            "Node changes made (or, in dry run, that would have been made)",
            ["action"],
            registry=reg,
        )
        for action in ACTIONS:
            self.node_patches.labels(action=action)
        for pool in pools:
            self.held_back.labels(pool=pool)
        for reason in reasons:
            self.bad_nodes.labels(reason=reason)
