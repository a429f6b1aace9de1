"""Queues (Kueue): pending and admitted workloads, quota vs usage and vs real capacity
(drift), preemptions and evictions (PodsReadyTimeout = gangs that never became ready),
admission wait."""

from __future__ import annotations

from generators.components.monitoring.dashboards import panels as g
from generators.components.monitoring.promql import Queries, match_any

TIMEOUT = 'reason="PodsReadyTimeout"'


CQ = g.matches("cluster_queue", "cluster_queue")


def workloads(q: Queries) -> list[g.Panel]:
    wait = q.kueue("kueue_admission_wait_time_seconds_bucket", CQ)
    buckets = f"sum by (cluster_queue, le) (rate({wait}[$__rate_interval]))"
    return [
        g.graph(
            "Pending workloads",
            "Per ClusterQueue; inadmissible ones cannot fit even when borrowing.",
            [g.per("sum", q.kueue("kueue_pending_workloads", CQ), "cluster_queue", "status")],
            stacked=True,
        ),
        g.graph(
            "Admitted active workloads",
            "Per ClusterQueue.",
            [g.per("sum", q.kueue("kueue_admitted_active_workloads", CQ), "cluster_queue")],
            stacked=True,
        ),
        g.graph(
            "Admission wait (p50, p90)",
            "Time from creation or requeue to admission.",
            [
                g.Query(
                    f"histogram_quantile({quantile}, {buckets})",
                    f"{{{{cluster_queue}}}} p{int(quantile * 100)}",
                )
                for quantile in (0.5, 0.9)
            ],
            unit="s",
            span=24,
        ),
    ]


def quota(q: Queries) -> list[g.Panel]:
    gpu = match_any("resource", [p.gpu_resource for p in q.env.pools])
    nominal = f"sum by (cluster_queue, flavor) ({q.kueue('kueue_cluster_queue_nominal_quota', gpu, CQ)})"
    usage = f"sum by (cluster_queue, flavor) ({q.kueue('kueue_cluster_queue_resource_usage', gpu, CQ)})"
    return [
        g.graph(
            "GPU quota vs usage",
            "Nominal quota and usage per ClusterQueue and flavor.",
            [
                g.Query(nominal, "{{cluster_queue}}/{{flavor}} quota"),
                g.Query(usage, "{{cluster_queue}}/{{flavor}} usage"),
            ],
        ),
        g.grid(
            "Quota and usage now",
            "Usage above quota is borrowed from the cohort.",
            [g.Query(nominal), g.Query(usage)],
            ["Nominal quota", "Usage"],
        ),
        g.graph(
            "Quota drift: nominal quota vs allocatable GPUs",
            "Per flavor: quota summed over "
            "ClusterQueues against allocatable GPUs of Ready, uncordoned nodes. Quota above capacity "
            "admits gangs that never run (KueueQuotaDrift).",
            [
                g.Query(q.nominal_gpus_by_flavor(), "{{flavor}} nominal quota"),
                g.Query(q.allocatable_gpus_by_flavor(), "{{flavor}} allocatable"),
            ],
            span=24,
        ),
    ]


def preemption(q: Queries) -> list[g.Panel]:
    evictions = q.kueue("kueue_evicted_workloads_total", CQ)
    preempted = q.kueue("kueue_preempted_workloads_total")
    timeouts = q.kueue("kueue_evicted_workloads_total", CQ, TIMEOUT)
    return [
        g.increase_by(
            "Evictions by reason",
            "PodsReadyTimeout: admitted gangs whose pods never all became Ready.",
            evictions,
            "reason",
            stacked=True,
            span=9,
        ),
        g.increase_by(
            "Preemptions by reason",
            "Workloads preempted, by the preempting ClusterQueue and reason.",
            preempted,
            "preempting_cluster_queue",
            "reason",
            stacked=True,
            span=9,
        ),
        g.single(
            "Gang timeouts in range",
            "PodsReadyTimeout evictions in the selected range.",
            g.Query(f"sum(increase({timeouts}[$__range])) or vector(0)"),
            limit=1,
            span=6,
        ),
    ]


DASHBOARD = g.Dashboard(
    "queues",
    "Queues",
    "Kueue workloads, GPU quota against usage and against the nodes "
    "that really exist, preemptions and evictions.",
    rows=(("Workloads", workloads), ("GPU quota", quota), ("Preemption and eviction", preemption)),
    variables=lambda q: [
        g.query_variable("cluster_queue", "ClusterQueue", q.kueue("kueue_pending_workloads"), "cluster_queue")
    ],
)
