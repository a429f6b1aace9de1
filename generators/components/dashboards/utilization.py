"""'Utilization is a lie': GPU_UTIL says a kernel is running, not that the GPU does useful
work. SM-active and tensor-core activity say how much of the chip is working; tensor
activity rises as training moves from 128 px to 1024 px. Fleet-wide, per job, stragglers."""

from __future__ import annotations

from typing import Any

from generators.components.dashboards.panels import Board, Query, graph, grid, query_variable, single
from generators.components.promql import Queries, quote
from generators.model.types import Environment

SLUG = "utilization"
STRAGGLERS = 20


def build(env: Environment) -> dict[str, Any]:
    q = Queries(env)
    m, h = q.m, q.m.host_label
    host, ns = f"{h}=~{quote('$host')}", f"namespace=~{quote('$namespace')}"
    util = f"{q.dcgm('DCGM_FI_DEV_GPU_UTIL', host, ns)} / 100"
    sm = q.dcgm("DCGM_FI_PROF_SM_ACTIVE", host, ns)
    tensor = q.dcgm("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", host, ns)
    on_pods = 'namespace!=""'  # GPUs that dcgm-exporter maps to a pod
    board = Board(
        m,
        SLUG,
        "Utilization is a lie",
        "GPU_UTIL (busy) next to SM-active and tensor-core activity (useful work), "
        "fleet-wide and per job, with the slowest GPUs of running jobs.",
        variables=[
            query_variable("host", "Host", q.dcgm("DCGM_FI_DEV_GPU_UTIL"), h),
            query_variable(
                "namespace", "Namespace", q.dcgm("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", on_pods), "namespace"
            ),
        ],
    )
    board.row(
        "Fleet",
        graph(
            "Busy vs working (fleet average)",
            "GPU_UTIL near 100% with low tensor activity: GPUs wait on data, the fabric or stragglers.",
            "percentunit",
            [
                Query(f"avg({util})", "GPU_UTIL (busy)"),
                Query(f"avg({sm})", "SM active"),
                Query(f"avg({tensor})", "Tensor-core active"),
            ],
            span=24,
        ),
        single(
            "GPU_UTIL", "Fleet average of DCGM_FI_DEV_GPU_UTIL.", "percentunit", Query(f"avg({util})"), span=8
        ),
        single(
            "SM active",
            "Fleet average of DCGM_FI_PROF_SM_ACTIVE.",
            "percentunit",
            Query(f"avg({sm})"),
            span=8,
        ),
        single(
            "Tensor-core active",
            "Fleet average of DCGM_FI_PROF_PIPE_TENSOR_ACTIVE.",
            "percentunit",
            Query(f"avg({tensor})"),
            span=8,
        ),
    )
    by_job = "namespace, pod"
    board.row(
        "Per job",
        graph(
            "Tensor-core activity by namespace",
            "Average over the GPUs of each namespace's pods.",
            "percentunit",
            [Query(f"avg by (namespace) ({tensor})", "{{namespace}}")],
        ),
        graph(
            "SM active by namespace",
            "Average over the GPUs of each namespace's pods.",
            "percentunit",
            [Query(f"avg by (namespace) ({sm})", "{{namespace}}")],
        ),
        grid(
            "Jobs: busy vs working",
            "Per pod, averaged over its GPUs.",
            "percentunit",
            [
                Query(f"avg by ({by_job}) ({util})"),
                Query(f"avg by ({by_job}) ({sm})"),
                Query(f"avg by ({by_job}) ({tensor})"),
            ],
            ["GPU_UTIL", "SM active", "Tensor active"],
        ),
        grid(
            f"Stragglers: {STRAGGLERS} GPUs with the lowest tensor activity",
            "A gang runs at the speed of its slowest GPU: a low one among busy peers is a suspect "
            "(thermal throttling, a bad link, a noisy neighbour).",
            "percentunit",
            [
                Query(
                    f"bottomk({STRAGGLERS}, avg by ({by_job}, {h}, gpu) "
                    f"({q.dcgm('DCGM_FI_PROF_PIPE_TENSOR_ACTIVE', host, ns, on_pods)}))"
                )
            ],
            ["Tensor active"],
            descending=False,
        ),
    )
    return board.build()
