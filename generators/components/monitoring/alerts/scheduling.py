"""Scheduling alerts: Kueue quota drift (the talk's out-of-sync quotas, caught live), gangs
that are admitted but never become ready, and inference that overflow failed to place."""

from __future__ import annotations

from generators.components.monitoring.alerts.rule import VALUE, Rule, alert, label
from generators.components.monitoring.promql import Queries, match_any

GANG_WINDOW = "1h"


def quota_drift(q: Queries) -> Rule:
    m = q.m
    expr = f"{q.nominal_gpus_by_flavor()} > on (flavor) {q.allocatable_gpus_by_flavor()}"
    return alert(
        m,
        "KueueQuotaDrift",
        expr,
        for_=m.alerts.quota_drift_for,
        severity="warning",
        summary=f"Kueue promises more {label('flavor')} GPUs than the nodes have.",
        description=(
            f"ClusterQueues hold {VALUE} GPUs of nominal quota in flavor {label('flavor')}, "
            "more than the allocatable GPUs of its Ready, schedulable nodes. Gangs will be "
            "admitted and never become ready. Run `generate.py sync-inventory` with the live "
            "node list, or bring the missing nodes back."
        ),
    )


def gang_admission(q: Queries) -> Rule:
    m = q.m
    evictions = q.kueue("kueue_evicted_workloads_total", 'reason="PodsReadyTimeout"')
    threshold = m.alerts.pods_ready_timeout_evictions_per_hour
    return alert(
        m,
        "KueueGangAdmissionFailing",
        f"sum by (cluster_queue) (increase({evictions}[{GANG_WINDOW}])) > {threshold}",
        severity="warning",
        summary=f"Gangs in ClusterQueue {label('cluster_queue')} time out before they are ready.",
        description=(
            f"Workloads of ClusterQueue {label('cluster_queue')} were evicted for "
            f"PodsReadyTimeout in the last {GANG_WINDOW} ({VALUE}): admitted, but their pods never all "
            "became Ready. Usually quota above real capacity (see KueueQuotaDrift) or "
            "unschedulable pods; check the workloads' events."
        ),
    )


def inference_pending(q: Queries) -> Rule:
    m = q.m
    classes = q.inference_priority_classes()
    info = q.ksm("kube_pod_info", match_any("priority_class", classes))
    pending = q.ksm("kube_pod_status_phase", 'phase="Pending"')
    expr = (
        f"max by (namespace, pod, priority_class) ({info}) "
        f"and on (namespace, pod) (max by (namespace, pod) ({pending}) == 1)"
    )
    return alert(
        m,
        "InferencePendingTooLong",
        expr,
        for_=m.alerts.inference_pending_for,
        severity="warning",
        summary=f"Inference pod {label('namespace')}/{label('pod')} is pending.",
        description=(
            f"Pod {label('namespace')}/{label('pod')} (priority class "
            f"{label('priority_class')}) has been Pending for more than "
            f"{m.alerts.inference_pending_for}. Inference should run on free GPUs or spill "
            "to a provider: check the overflow gate and the virtual nodes."
        ),
    )


def rules(q: Queries) -> list[Rule]:
    return [quota_drift(q), gang_admission(q), inference_pending(q)]
