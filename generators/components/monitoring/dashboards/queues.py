"""Queues (Kueue): pending and admitted workloads, quota vs usage and vs real capacity
(drift), preemptions and evictions (PodsReadyTimeout = gangs that never became ready),
admission wait."""

from __future__ import annotations

from typing import Any

from generators.components.monitoring.dashboards.panels import (
    Board,
    Panel,
    Query,
    graph,
    grid,
    matches,
    query_variable,
    single,
)
from generators.components.monitoring.promql import Queries, match_any
from generators.model.environment import Environment

SLUG = "queues"
TIMEOUT = 'reason="PodsReadyTimeout"'


CQ = matches("cluster_queue", "cluster_queue")


def workloads(q: Queries) -> list[Panel]:
    wait = q.kueue("kueue_admission_wait_time_seconds_bucket", CQ)
    buckets = f"sum by (cluster_queue, le) (rate({wait}[$__rate_interval]))"
    return [
        graph(
            "Pending workloads",
            "Per ClusterQueue; inadmissible ones cannot fit even when borrowing.",
            "none",
            [
                Query(
                    f"sum by (cluster_queue, status) ({q.kueue('kueue_pending_workloads', CQ)})",
                    "{{cluster_queue}} {{status}}",
                )
            ],
            stacked=True,
        ),
        graph(
            "Admitted active workloads",
            "Per ClusterQueue.",
            "none",
            [
                Query(
                    f"sum by (cluster_queue) ({q.kueue('kueue_admitted_active_workloads', CQ)})",
                    "{{cluster_queue}}",
                )
            ],
            stacked=True,
        ),
        graph(
            "Admission wait (p50, p90)",
            "Time from creation or requeue to admission.",
            "s",
            [
                Query(
                    f"histogram_quantile({quantile}, {buckets})",
                    f"{{{{cluster_queue}}}} p{int(quantile * 100)}",
                )
                for quantile in (0.5, 0.9)
            ],
            span=24,
        ),
    ]


def quota(q: Queries) -> list[Panel]:
    gpu = match_any("resource", [p.gpu_resource for p in q.env.pools])
    nominal = f"sum by (cluster_queue, flavor) ({q.kueue('kueue_cluster_queue_nominal_quota', gpu, CQ)})"
    usage = f"sum by (cluster_queue, flavor) ({q.kueue('kueue_cluster_queue_resource_usage', gpu, CQ)})"
    return [
        graph(
            "GPU quota vs usage",
            "Nominal quota and usage per ClusterQueue and flavor.",
            "none",
            [
                Query(nominal, "{{cluster_queue}}/{{flavor}} quota"),
                Query(usage, "{{cluster_queue}}/{{flavor}} usage"),
            ],
        ),
        grid(
            "Quota and usage now",
            "Usage above quota is borrowed from the cohort.",
            "none",
            [Query(nominal), Query(usage)],
            ["Nominal quota", "Usage"],
        ),
        graph(
            "Quota drift: nominal quota vs allocatable GPUs",
            "Per flavor: quota summed over "
            "ClusterQueues against allocatable GPUs of Ready, uncordoned nodes. Quota above capacity "
            "admits gangs that never run (KueueQuotaDrift).",
            "none",
            [
                Query(q.nominal_gpus_by_flavor(), "{{flavor}} nominal quota"),
                Query(q.allocatable_gpus_by_flavor(), "{{flavor}} allocatable"),
            ],
            span=24,
        ),
    ]


def preemption(q: Queries) -> list[Panel]:
    evictions = q.kueue("kueue_evicted_workloads_total", CQ)
    preempted = q.kueue("kueue_preempted_workloads_total")
    timeouts = q.kueue("kueue_evicted_workloads_total", CQ, TIMEOUT)
    return [
        graph(
            "Evictions by reason",
            "PodsReadyTimeout: admitted gangs whose pods never all became Ready.",
            "none",
            [Query(f"sum by (reason) (increase({evictions}[$__rate_interval]))", "{{reason}}")],
            stacked=True,
            span=9,
        ),
        graph(
            "Preemptions by reason",
            "Workloads preempted, by the preempting ClusterQueue and reason.",
            "none",
            [
                Query(
                    f"sum by (preempting_cluster_queue, reason) (increase({preempted}[$__rate_interval]))",
                    "{{preempting_cluster_queue}} {{reason}}",
                )
            ],
            stacked=True,
            span=9,
        ),
        single(
            "Gang timeouts in range",
            "PodsReadyTimeout evictions in the selected range.",
            "none",
            Query(f"sum(increase({timeouts}[$__range])) or vector(0)"),
            limit=1,
            span=6,
        ),
    ]


def build(env: Environment) -> dict[str, Any]:
    q = Queries(env)
    board = Board(
        q.m,
        SLUG,
        "Queues",
        "Kueue workloads, GPU quota against usage and against the nodes "
        "that really exist, preemptions and evictions.",
        variables=[
            query_variable(
                "cluster_queue", "ClusterQueue", q.kueue("kueue_pending_workloads"), "cluster_queue"
            )
        ],
    )
    board.row("Workloads", *workloads(q))
    board.row("GPU quota", *quota(q))
    board.row("Preemption and eviction", *preemption(q))
    return board.build()
