"""InfiniBand alerts from node-exporter's infiniband collector: most multi-node training
failures were cross-node communication, and DCGM does not see the fabric."""

from __future__ import annotations

from generators.components.monitoring.alerts.rule import Alert, Rule, context, evaluate, label
from generators.components.monitoring.promql import Queries

RULES = (
    Alert(
        "InfiniBandPortNotActive",
        lambda q: q.ports_not_active(
            lambda down: f"max by ({q.m.node_exporter_host_label}, device, port) {down}"
        ),
        for_="{a.infiniband_port_down_for}",
        severity="critical",
        summary="InfiniBand port {labels.device}/{labels.port} on {host} is not active.",
        description=(
            "Port {labels.port} of {labels.device} on {host} has not been ACTIVE with its link up "
            "for {a.infiniband_port_down_for}. Multi-node jobs on this node will hang in NCCL: "
            "drain the node and check cable, switch port and HCA."
        ),
    ),
    Alert(
        "InfiniBandLinkErrors",
        lambda q: q.ib_link_errors(lambda per_port: per_port),  # already per port and counter
        severity="warning",
        summary="InfiniBand {labels.counter} errors on {host} {labels.device}/{labels.port}.",
        description=(
            "Port {labels.port} of {labels.device} on {host} counted {value} {labels.counter} "
            "errors within {a.error_window} (threshold {a.infiniband_errors_per_window}). A "
            "degrading link slows every collective of the job: drain the node and have the link "
            "checked."
        ),
    ),
)


def rules(q: Queries) -> list[Rule]:
    return evaluate(RULES, q, q.m, context(q, host=label(q.m.node_exporter_host_label)))
