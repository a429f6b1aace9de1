"""Overflow alerts: a gate that flaps (hysteresis failing, inference bouncing between the
cluster and providers), a virtual node that is down (nowhere to spill to), and the gate's
own failures: blind while open (money spent with nobody deciding), node patches failing,
a selector that matches no node, no leader."""

from __future__ import annotations

from generators.components.monitoring.alerts.rule import VALUE, Rule, alert, label
from generators.components.monitoring.promql import Queries

FLAP_WINDOW = "1h"
MATCHES_NONE_FOR = "10m"  # a virtual-kubelet restart re-registers its node within seconds


def flapping(q: Queries) -> Rule:
    m = q.m
    limit = m.alerts.gate_transitions_per_hour
    transitions = q.gate("trainyard_gate_transitions_total")
    return alert(
        m,
        "OverflowGateFlapping",
        f"sum by (gate) (increase({transitions}[{FLAP_WINDOW}])) > {limit}",
        severity="warning",
        summary=f"Overflow gate {label('gate')} changed state {VALUE} times in {FLAP_WINDOW}.",
        description=(
            f"The overflow gate of provider {label('gate')} opened or closed {VALUE} times in "
            f"the last {FLAP_WINDOW} (more than {limit}). Inference is bouncing between the "
            "cluster and the provider: widen the band (closeWhenFreeGpusAtLeast vs "
            "openWhenFreeGpusBelow) or lengthen closeAfterSeconds."
        ),
    )


def virtual_node(q: Queries) -> Rule:
    m = q.m
    ready = q.ksm("kube_node_status_condition", 'condition="Ready"', 'status="true"', q.virtual_nodes())
    return alert(
        m,
        "VirtualNodeNotReady",
        f"max by (node) ({ready}) == 0",
        for_=m.alerts.virtual_node_not_ready_for,
        severity="warning",
        summary=f"Virtual node {label('node')} is not Ready.",
        description=(
            f"Virtual node {label('node')} has been NotReady for "
            f"{m.alerts.virtual_node_not_ready_for}: inference cannot spill to its provider. "
            "Check the virtual-kubelet Deployment and the provider credentials."
        ),
    )


def blind_while_open(q: Queries) -> Rule:
    m = q.m
    limit = q.blind_after_seconds(q.overflow.gate.reconcile_interval_seconds)
    last = q.gate("trainyard_gate_last_successful_query_timestamp_seconds")
    closed = q.gate("trainyard_gate_closed")
    return alert(
        m,
        "OverflowGateBlindWhileOpen",
        f"min by (gate) ({closed}) == 0 and on () (time() - max({last})) > {limit}",
        severity="critical",
        summary=f"Overflow gate {label('gate')} is open and has had no free-GPU reading for over {limit}s.",
        description=(
            f"Virtual nodes of provider {label('gate')} are open to spilled pods, and the gate "
            f"controller has had no usable free-GPU query for more than {limit}s, so nothing "
            "will close it when the cluster has GPUs again: money is being spent with nobody "
            "deciding. Check trainyard_gate_query_success and the gate's log (free-GPU query "
            "failed), and Prometheus and kube-state-metrics."
        ),
    )


def errors(q: Queries) -> Rule:
    m = q.m
    failures = q.gate("trainyard_gate_errors_total", 'stage=~"nodes|pass|election"')
    window = m.alerts.controller_error_window
    return alert(
        m,
        "OverflowGateErrors",
        q.failing(failures),
        severity="warning",
        summary=f"The overflow gate failed at stage {label('stage')} in the last {window}.",
        description=(
            f"The overflow gate controller counted {VALUE} failures at stage {label('stage')} "
            f"in {window} (nodes: a node list or taint patch refused or unreachable; pass: "
            "an unexpected error in a reconcile pass; election: the Lease). The taints may not "
            "be what the gate decided: trainyard_gate_closed shows what is on the nodes; the "
            "log line carries the API server's message."
        ),
    )


def matches_none(q: Queries) -> Rule:
    m = q.m
    matched = q.gate("trainyard_gate_matched_nodes")
    return alert(
        m,
        "OverflowGateMatchesNoNode",
        f"max by (gate) ({matched}) == 0",
        for_=MATCHES_NONE_FOR,
        severity="warning",
        summary=f"Overflow gate {label('gate')} selects no node.",
        description=(
            f"The node selector of gate {label('gate')} has matched no node for "
            f"{MATCHES_NONE_FOR}: the gate guards nothing. Either the provider's virtual node "
            "is gone (virtual-kubelet down) or its labels changed (the MutatingAdmissionPolicy "
            "that adds trainyard.dev/provider)."
        ),
    )


def no_leader(q: Queries) -> Rule:
    m = q.m
    leader = q.gate("trainyard_gate_leader")
    no_leader_for = m.alerts.controller_no_leader_for
    return alert(
        m,
        "OverflowGateNoLeader",
        q.no_leader(leader),
        for_=no_leader_for,
        severity="warning",
        summary="No overflow gate controller holds the Lease.",
        description=(
            f"No overflow gate process has acted for {no_leader_for}: the taints stay as they "
            "are, whatever the free GPUs. Check the overflow-gate pods and their log "
            "(lease attempt failed)."
        ),
    )


def rules(q: Queries) -> list[Rule]:
    return [flapping(q), virtual_node(q), blind_while_open(q), errors(q), matches_none(q), no_leader(q)]
