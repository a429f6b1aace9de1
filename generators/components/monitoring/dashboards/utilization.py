"""'Utilization is a lie': GPU_UTIL says a kernel is running, not that the GPU does useful
work. SM-active and tensor-core activity say how much of the chip is working; tensor
activity rises as training moves from 128 px to 1024 px. Fleet-wide, per job, stragglers."""

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
from generators.components.monitoring.promql import Queries
from generators.model.environment import Environment

SLUG = "utilization"
STRAGGLERS = 20


ON_PODS = 'namespace!=""'  # GPUs that dcgm-exporter maps to a pod
BY_JOB = "namespace, pod"


class _Signals:
    """The three signals, filtered by the host and namespace variables."""

    def __init__(self, q: Queries) -> None:
        self.q, self.h = q, q.m.host_label
        self.filters = (matches(self.h, "host"), matches("namespace", "namespace"))
        self.util = f"{q.dcgm('DCGM_FI_DEV_GPU_UTIL', *self.filters)} / 100"
        self.sm = q.dcgm("DCGM_FI_PROF_SM_ACTIVE", *self.filters)
        self.tensor = q.dcgm("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", *self.filters)


def fleet(s: _Signals) -> list[Panel]:
    return [
        graph(
            "Busy vs working (fleet average)",
            "GPU_UTIL near 100% with low tensor activity: GPUs wait on data, the fabric or stragglers.",
            "percentunit",
            [
                Query(f"avg({s.util})", "GPU_UTIL (busy)"),
                Query(f"avg({s.sm})", "SM active"),
                Query(f"avg({s.tensor})", "Tensor-core active"),
            ],
            span=24,
        ),
        single(
            "GPU_UTIL",
            "Fleet average of DCGM_FI_DEV_GPU_UTIL.",
            "percentunit",
            Query(f"avg({s.util})"),
            span=8,
        ),
        single(
            "SM active",
            "Fleet average of DCGM_FI_PROF_SM_ACTIVE.",
            "percentunit",
            Query(f"avg({s.sm})"),
            span=8,
        ),
        single(
            "Tensor-core active",
            "Fleet average of DCGM_FI_PROF_PIPE_TENSOR_ACTIVE.",
            "percentunit",
            Query(f"avg({s.tensor})"),
            span=8,
        ),
    ]


def per_job(s: _Signals) -> list[Panel]:
    on_pods = s.q.dcgm("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", *s.filters, ON_PODS)
    stragglers = f"bottomk({STRAGGLERS}, avg by ({BY_JOB}, {s.h}, gpu) ({on_pods}))"
    return [
        graph(
            "Tensor-core activity by namespace",
            "Average over the GPUs of each namespace's pods.",
            "percentunit",
            [Query(f"avg by (namespace) ({s.tensor})", "{{namespace}}")],
        ),
        graph(
            "SM active by namespace",
            "Average over the GPUs of each namespace's pods.",
            "percentunit",
            [Query(f"avg by (namespace) ({s.sm})", "{{namespace}}")],
        ),
        grid(
            "Jobs: busy vs working",
            "Per pod, averaged over its GPUs.",
            "percentunit",
            [
                Query(f"avg by ({BY_JOB}) ({s.util})"),
                Query(f"avg by ({BY_JOB}) ({s.sm})"),
                Query(f"avg by ({BY_JOB}) ({s.tensor})"),
            ],
            ["GPU_UTIL", "SM active", "Tensor active"],
        ),
        grid(
            f"Stragglers: {STRAGGLERS} GPUs with the lowest tensor activity",
            "A gang runs at the speed of its slowest GPU: a low one among busy peers is a suspect "
            "(thermal throttling, a bad link, a noisy neighbour).",
            "percentunit",
            [Query(stragglers)],
            ["Tensor active"],
            descending=False,
        ),
    ]


def build(env: Environment) -> dict[str, Any]:
    q = Queries(env)
    s = _Signals(q)
    board = Board(
        q.m,
        SLUG,
        "Utilization is a lie",
        "GPU_UTIL (busy) next to SM-active and tensor-core activity (useful work), "
        "fleet-wide and per job, with the slowest GPUs of running jobs.",
        variables=[
            query_variable("host", "Host", q.dcgm("DCGM_FI_DEV_GPU_UTIL"), s.h),
            query_variable(
                "namespace", "Namespace", q.dcgm("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", ON_PODS), "namespace"
            ),
        ],
    )
    board.row("Fleet", *fleet(s))
    board.row("Per job", *per_job(s))
    return board.build()
