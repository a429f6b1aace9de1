"""InfiniBand alerts from node-exporter's infiniband collector: most multi-node training
failures were cross-node communication, and DCGM does not see the fabric."""

from __future__ import annotations

from generators.components.monitoring.alerts.rule import VALUE, Rule, alert, label
from generators.components.monitoring.promql import Queries, labelled_union
from generators.model.exporters import ACTIVE_STATE, LINK_ERROR_COUNTERS, LINK_UP_PHYSICAL_STATE


def _by_port(q: Queries, extra: str = "") -> str:
    return ", ".join(x for x in (q.m.node_exporter_host_label, "device", "port", extra) if x)


def port_not_active(q: Queries) -> Rule:
    m, h = q.m, q.m.node_exporter_host_label
    expr = (
        f"max by ({_by_port(q)}) ({q.ib('node_infiniband_state_id')} != {ACTIVE_STATE} "
        f"or {q.ib('node_infiniband_physical_state_id')} != {LINK_UP_PHYSICAL_STATE})"
    )
    return alert(
        m,
        "InfiniBandPortNotActive",
        expr,
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
    increases = {name: f"increase({q.ib(metric)}[{window}])" for name, metric in LINK_ERROR_COUNTERS.items()}
    expr = (
        f"sum by ({_by_port(q, 'counter')}) ({labelled_union('counter', increases)}) "
        f"> {m.alerts.infiniband_errors_per_window}"
    )
    return alert(
        m,
        "InfiniBandLinkErrors",
        expr,
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
