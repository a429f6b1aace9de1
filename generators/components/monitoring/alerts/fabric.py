"""InfiniBand alerts from node-exporter's infiniband collector: most multi-node training
failures were cross-node communication, and DCGM does not see the fabric."""

from __future__ import annotations

from generators.components.monitoring.alerts.rule import VALUE, Rule, alert, label
from generators.components.monitoring.promql import Queries


def port_not_active(q: Queries) -> Rule:
    m, h = q.m, q.m.node_exporter_host_label
    return alert(
        m,
        "InfiniBandPortNotActive",
        q.ports_not_active(lambda down: f"max by ({h}, device, port) {down}"),
        for_=m.alerts.infiniband_port_down_for,
        severity="critical",
        summary=f"InfiniBand port {label('device')}/{label('port')} on {label(h)} is not active.",
        description=(
            f"Port {label('port')} of {label('device')} on {label(h)} has not been ACTIVE with "
            f"its link up for {m.alerts.infiniband_port_down_for}. Multi-node jobs on this "
            "node will hang in NCCL: drain the node and check cable, switch port and HCA."
        ),
    )


def link_errors(q: Queries) -> Rule:
    m, h = q.m, q.m.node_exporter_host_label
    window = m.alerts.error_window
    return alert(
        m,
        "InfiniBandLinkErrors",
        q.ib_link_errors(lambda per_port: per_port),  # already per port and counter
        severity="warning",
        summary=f"InfiniBand {label('counter')} errors on {label(h)} {label('device')}/{label('port')}.",
        description=(
            f"Port {label('port')} of {label('device')} on {label(h)} counted {VALUE} "
            f"{label('counter')} errors within {window} (threshold "
            f"{m.alerts.infiniband_errors_per_window}). A degrading link slows every "
            "collective of the job: drain the node and have the link checked."
        ),
    )


def rules(q: Queries) -> list[Rule]:
    return [port_not_active(q), link_errors(q)]
