"""'Utilization is a lie': GPU_UTIL says a kernel is running, not that the GPU does useful
work. SM-active and tensor-core activity say how much of the chip is working; tensor
activity rises as training moves from 128 px to 1024 px. Fleet-wide, per job, stragglers."""

from __future__ import annotations

from generators.components.monitoring.dashboards import panels as g
from generators.components.monitoring.promql import Queries

STRAGGLERS = 20


BY_JOB = "namespace, pod"


class _Signals:
    """The three signals, filtered by the host and namespace variables; `held=True` keeps only
    GPUs a pod holds (Queries.held_by_pod: idle GPUs carry the exporter pod's labels)."""

    def __init__(self, q: Queries, held: bool = False) -> None:
        self.q, self.h = q, q.m.host_label
        on_pods = (q.held_by_pod(),) if held else ()
        self.filters = (g.matches(self.h, "host"), g.matches("namespace", "namespace"), *on_pods)
        self.util = f"{q.dcgm('DCGM_FI_DEV_GPU_UTIL', *self.filters)} / 100"
        self.sm = q.dcgm("DCGM_FI_PROF_SM_ACTIVE", *self.filters)
        self.tensor = q.dcgm("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", *self.filters)


def fleet(q: Queries) -> list[g.Panel]:
    s = _Signals(q)
    return [
        g.graph(
            "Busy vs working (fleet average)",
            "GPU_UTIL near 100% with low tensor activity: GPUs wait on data, the fabric or stragglers.",
            [
                g.Query(f"avg({s.util})", "GPU_UTIL (busy)"),
                g.Query(f"avg({s.sm})", "SM active"),
                g.Query(f"avg({s.tensor})", "Tensor-core active"),
            ],
            unit="percentunit",
            span=24,
        ),
        *(
            g.single(title, f"Fleet average of {field}.", g.Query(f"avg({expr})"), unit="percentunit", span=8)
            for title, field, expr in (
                ("GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL", s.util),
                ("SM active", "DCGM_FI_PROF_SM_ACTIVE", s.sm),
                ("Tensor-core active", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", s.tensor),
            )
        ),
    ]


def per_job(q: Queries) -> list[g.Panel]:
    s = _Signals(q, held=True)
    stragglers = f"bottomk({STRAGGLERS}, avg by ({BY_JOB}, {s.h}, gpu) ({s.tensor}))"
    return [
        g.graph(
            "Tensor-core activity by namespace",
            "Average over the GPUs of each namespace's pods.",
            [g.per("avg", s.tensor, "namespace")],
            unit="percentunit",
        ),
        g.graph(
            "SM active by namespace",
            "Average over the GPUs of each namespace's pods.",
            [g.per("avg", s.sm, "namespace")],
            unit="percentunit",
        ),
        g.grid(
            "Jobs: busy vs working",
            "Per pod, averaged over its GPUs.",
            [
                g.Query(f"avg by ({BY_JOB}) ({s.util})"),
                g.Query(f"avg by ({BY_JOB}) ({s.sm})"),
                g.Query(f"avg by ({BY_JOB}) ({s.tensor})"),
            ],
            ["GPU_UTIL", "SM active", "Tensor active"],
            unit="percentunit",
        ),
        g.grid(
            f"Stragglers: {STRAGGLERS} GPUs with the lowest tensor activity",
            "A gang runs at the speed of its slowest GPU: a low one among busy peers is a suspect "
            "(thermal throttling, a bad link, a noisy neighbour).",
            [g.Query(stragglers)],
            ["Tensor active"],
            unit="percentunit",
            descending=False,
        ),
    ]


DASHBOARD = g.Dashboard(
    "utilization",
    "Utilization is a lie",
    "GPU_UTIL (busy) next to SM-active and tensor-core activity (useful work), "
    "fleet-wide and per job, with the slowest GPUs of running jobs.",
    rows=(("Fleet", fleet), ("Per job", per_job)),
    variables=lambda q: [
        g.query_variable("host", "Host", q.dcgm("DCGM_FI_DEV_GPU_UTIL"), q.m.host_label),
        g.query_variable(
            "namespace", "Namespace", q.dcgm("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", q.held_by_pod()), "namespace"
        ),
    ],
)
