"""Scheduling alerts: Kueue quota drift (the talk's out-of-sync quotas, caught live), gangs
that are admitted but never become ready, and inference that overflow failed to place."""

from __future__ import annotations

from generators.components.monitoring.alerts.rule import Alert, Rule, context, evaluate
from generators.components.monitoring.promql import Queries, match_any

GANG_WINDOW = "1h"


def _gang_timeouts(q: Queries) -> str:
    evictions = q.kueue("kueue_evicted_workloads_total", 'reason="PodsReadyTimeout"')
    threshold = q.m.alerts.pods_ready_timeout_evictions_per_hour
    return f"sum by (cluster_queue) (increase({evictions}[{GANG_WINDOW}])) > {threshold}"


def _inference_pending(q: Queries) -> str:
    info = q.ksm("kube_pod_info", match_any("priority_class", q.inference_priority_classes()))
    pending = q.ksm("kube_pod_status_phase", 'phase="Pending"')
    return (
        f"max by (namespace, pod, priority_class) ({info}) "
        f"and on (namespace, pod) (max by (namespace, pod) ({pending}) == 1)"
    )


RULES = (
    Alert(
        "KueueQuotaDrift",
        lambda q: f"{q.nominal_gpus_by_flavor()} > on (flavor) {q.allocatable_gpus_by_flavor()}",
        for_="{a.quota_drift_for}",
        severity="warning",
        summary="Kueue promises more {labels.flavor} GPUs than the nodes have.",
        description=(
            "ClusterQueues hold {value} GPUs of nominal quota in flavor {labels.flavor}, more "
            "than the allocatable GPUs of its Ready, schedulable nodes. Gangs will be admitted "
            "and never become ready. Run `generate.py sync-inventory` with the live node list, "
            "or bring the missing nodes back."
        ),
    ),
    Alert(
        "KueueGangAdmissionFailing",
        _gang_timeouts,
        severity="warning",
        summary="Gangs in ClusterQueue {labels.cluster_queue} time out before they are ready.",
        description=(
            "Workloads of ClusterQueue {labels.cluster_queue} were evicted for PodsReadyTimeout "
            "in the last {gang_window} ({value}): admitted, but their pods never all became "
            "Ready. Usually quota above real capacity (see KueueQuotaDrift) or unschedulable "
            "pods; check the workloads' events."
        ),
    ),
    Alert(
        "InferencePendingTooLong",
        _inference_pending,
        for_="{a.inference_pending_for}",
        severity="warning",
        summary="Inference pod {labels.namespace}/{labels.pod} is pending.",
        description=(
            "Pod {labels.namespace}/{labels.pod} (priority class {labels.priority_class}) has "
            "been Pending for more than {a.inference_pending_for}. Inference should run on free "
            "GPUs or spill to a provider: check the overflow gate and the virtual nodes."
        ),
    ),
)


def rules(q: Queries) -> list[Rule]:
    return evaluate(RULES, q, q.m, context(q, gang_window=GANG_WINDOW))
