"""Overflow alerts: a gate that flaps (hysteresis failing, inference bouncing between the
cluster and providers), a virtual node that is down (nowhere to spill to), and the gate's
own failures: blind while open (money spent with nobody deciding), node patches failing,
a selector that matches no node, no leader."""

from __future__ import annotations

from generators.components.monitoring.alerts import controllers
from generators.components.monitoring.alerts.rule import Alert, Rule, context, evaluate
from generators.components.monitoring.promql import Queries

FLAP_WINDOW = "1h"
MATCHES_NONE_FOR = "10m"  # a virtual-kubelet restart re-registers its node within seconds


def _blind_after(q: Queries) -> int:
    return q.blind_after_seconds(q.overflow.gate.reconcile_interval_seconds)


def _flapping(q: Queries) -> str:
    transitions = q.gate("trainyard_gate_transitions_total")
    return f"sum by (gate) (increase({transitions}[{FLAP_WINDOW}])) > {q.m.alerts.gate_transitions_per_hour}"


def _virtual_node_down(q: Queries) -> str:
    ready = q.virtual_nodes_ready()
    return f"max by (node) ({ready}) == 0"


def _blind_while_open(q: Queries) -> str:
    last = q.gate("trainyard_gate_last_successful_query_timestamp_seconds")
    closed = q.gate("trainyard_gate_closed")
    return f"min by (gate) ({closed}) == 0 and on () (time() - max({last})) > {_blind_after(q)}"


RULES = (
    Alert(
        "OverflowGateFlapping",
        _flapping,
        severity="warning",
        summary="Overflow gate {labels.gate} changed state {value} times in {flap_window}.",
        description=(
            "The overflow gate of provider {labels.gate} opened or closed {value} times in the "
            "last {flap_window} (more than {a.gate_transitions_per_hour}). Inference is bouncing "
            "between the cluster and the provider: widen the band (closeWhenFreeGpusAtLeast vs "
            "openWhenFreeGpusBelow) or lengthen closeAfterSeconds."
        ),
    ),
    Alert(
        "VirtualNodeNotReady",
        _virtual_node_down,
        for_="{a.virtual_node_not_ready_for}",
        severity="warning",
        summary="Virtual node {labels.node} is not Ready.",
        description=(
            "Virtual node {labels.node} has been NotReady for {a.virtual_node_not_ready_for}: "
            "inference cannot spill to its provider. Check the virtual-kubelet Deployment and "
            "the provider credentials."
        ),
    ),
    Alert(
        "OverflowGateBlindWhileOpen",
        _blind_while_open,
        severity="critical",
        summary="Overflow gate {labels.gate} is open and has had no free-GPU reading for over {blind}s.",
        description=(
            "Virtual nodes of provider {labels.gate} are open to spilled pods, and the gate "
            "controller has had no usable free-GPU query for more than {blind}s, so nothing "
            "will close it when the cluster has GPUs again: money is being spent with nobody "
            "deciding. Check trainyard_gate_query_success and the gate's log (free-GPU query "
            "failed), and Prometheus and kube-state-metrics."
        ),
    ),
    Alert(
        "OverflowGateErrors",
        lambda q: q.failing(q.gate("trainyard_gate_errors_total", 'stage=~"nodes|pass|election"')),
        severity="warning",
        summary="The overflow gate failed at stage {labels.stage} in the last {a.controller_error_window}.",
        description=(
            "The overflow gate controller counted {value} failures at stage {labels.stage} in "
            "{a.controller_error_window} (nodes: a node list or taint patch refused or "
            "unreachable; pass: an unexpected error in a reconcile pass; election: the Lease). "
            "The taints may not be what the gate decided: trainyard_gate_closed shows what is on "
            "the nodes; the log line carries the API server's message."
        ),
    ),
    Alert(
        "OverflowGateMatchesNoNode",
        lambda q: f"max by (gate) ({q.gate('trainyard_gate_matched_nodes')}) == 0",
        for_="{matches_none_for}",
        severity="warning",
        summary="Overflow gate {labels.gate} selects no node.",
        description=(
            "The node selector of gate {labels.gate} has matched no node for {matches_none_for}: "
            "the gate guards nothing. Either the provider's virtual node is gone (virtual-kubelet "
            "down) or its labels changed (the MutatingAdmissionPolicy that adds "
            "trainyard.dev/provider)."
        ),
    ),
    controllers.no_leader(
        "OverflowGateNoLeader",
        controllers.GATE,
        lambda q: q.gate("trainyard_gate_leader"),
        "the taints stay as they are, whatever the free GPUs",
    ),
)


def rules(q: Queries) -> list[Rule]:
    facts = context(q, flap_window=FLAP_WINDOW, matches_none_for=MATCHES_NONE_FOR, blind=_blind_after(q))
    return evaluate(RULES, q, q.m, facts)
