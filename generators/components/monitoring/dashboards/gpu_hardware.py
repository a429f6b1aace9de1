"""GPU hardware: the talk's 78 °C rule drawn as a line, and every signal that says 'replace'."""

from __future__ import annotations

from typing import Any

from generators.components.monitoring.dashboards.panels import (
    Board,
    Panel,
    Query,
    graph,
    grid,
    legend,
    matches,
    query_variable,
    single,
)
from generators.components.monitoring.promql import Queries
from generators.model.environment import Environment
from generators.model.promql import below_blank, share_of_time, unless_blank

SLUG = "gpu-hardware"  # not "gpu-health": that names the quarantine controller (health.py)
NOT_IDLE = 'clock_event!="gpu_idle"'  # an idle GPU lowering its clocks is not a problem
REMAP_SERIES = (
    ("uncorrectable", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"),
    ("correctable", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"),
    ("failed", "DCGM_FI_DEV_ROW_REMAP_FAILURE"),
)


class _Scope:
    """The host variable applied to dcgm-exporter series, and per-GPU grouping."""

    def __init__(self, q: Queries) -> None:
        self.q, self.h = q, q.m.host_label
        self.host = matches(self.h, "host")
        self.by_gpu = f"{self.h}, gpu"
        self.legend = legend(self.h) + " GPU {{gpu}}"

    def per_gpu(self, metric: str, *extra: str) -> str:
        return f"max by ({self.by_gpu}) ({self.q.dcgm(metric, self.host, *extra)})"


def temperature(s: _Scope) -> list[Panel]:
    q, limit = s.q, s.q.m.gpu_temp_limit_celsius
    temp = q.temp_plausible("DCGM_FI_DEV_GPU_TEMP", s.host)
    too_hot = q.gpu_too_hot(lambda plausible: plausible, s.host)
    missing = f"count({q.nodes_missing_gpus()}) or vector(0)"
    return [
        graph(
            "GPU temperature",
            f"Per GPU; the red line is the {limit} °C limit (GPUTemperatureHigh).",
            "celsius",
            [Query(f"max by ({s.by_gpu}) ({temp})", s.legend)],
            limit=limit,
        ),
        single(
            f"GPUs above {limit} °C",
            "Count of GPUs over the limit now; each one should be drained.",
            "none",
            Query(f"count({too_hot}) or vector(0)"),
            limit=1,
            span=4,
        ),
        single(
            "Hottest GPU",
            "Highest GPU temperature now.",
            "celsius",
            Query(f"max({temp})"),
            limit=limit,
            span=4,
        ),
        single(
            "Nodes missing GPUs",
            "Nodes showing fewer GPUs than their pool's perNode (GPUMissing).",
            "none",
            Query(missing),
            limit=1,
            span=4,
        ),
        graph(
            "HBM temperature",
            "Memory (HBM) temperature per GPU.",
            "celsius",
            [Query(f"max by ({s.by_gpu}) {q.temp_plausible('DCGM_FI_DEV_MEMORY_TEMP', s.host)}", s.legend)],
        ),
    ]


def power_and_clocks(s: _Scope) -> list[Panel]:
    q = s.q

    def throttled(metric: str) -> str:
        series = q.dcgm(metric, s.host)
        return f"max by ({s.by_gpu}) {unless_blank(series, share_of_time(series, '$__rate_interval'))}"

    events = f"sum by ({s.h}, clock_event) ({q.dcgm('DCGM_EXP_CLOCK_EVENTS_COUNT', s.host, NOT_IDLE)})"
    return [
        graph("Power draw", "Per GPU.", "watt", [Query(s.per_gpu("DCGM_FI_DEV_POWER_USAGE"), s.legend)]),
        graph(
            "SM clock",
            "Per GPU; a drop under load means throttling.",
            "hertz",
            [Query(f"{s.per_gpu('DCGM_FI_DEV_SM_CLOCK')} * 1e6", s.legend)],
        ),
        graph(
            "Time throttled",
            "Share of time throttled by temperature or power (DCGM violation counters).",
            "percentunit",
            [
                Query(throttled("DCGM_FI_DEV_THERMAL_VIOLATION"), s.legend + " thermal"),
                Query(throttled("DCGM_FI_DEV_POWER_VIOLATION"), s.legend + " power"),
            ],
            limit=q.m.alerts.thermal_throttle_percent / 100,
        ),
        graph(
            "Throttle reasons",
            "Clock events per host and reason within dcgm-exporter's count window.",
            "none",
            [Query(events, legend(s.h) + " {{clock_event}}")],
        ),
    ]


def errors(s: _Scope) -> list[Panel]:
    q = s.q
    codes = ", ".join(str(c) for c in q.m.xid_replace_codes)
    xids = (
        f"max by ({s.by_gpu}, xid) (max_over_time("
        f"{q.dcgm('DCGM_EXP_XID_ERRORS_COUNT', s.host)}[$__range])) > 0"
    )
    return [
        grid(
            "XID errors in range",
            f"XIDs per GPU in the selected range; replace codes: {codes}.",
            "none",
            [Query(xids)],
            ["Count"],
        ),
        graph(
            "Row remapping",
            "Remapped rows (uncorrectable errors mean a reset, failure means replace).",
            "none",
            [
                Query(f"max by ({s.by_gpu}) ({below_blank(q.dcgm(metric, s.host))})", f"{s.legend} {name}")
                for name, metric in REMAP_SERIES
            ],
        ),
    ]


def build(env: Environment) -> dict[str, Any]:
    q = Queries(env)
    s = _Scope(q)
    limit = q.m.gpu_temp_limit_celsius
    board = Board(
        q.m,
        SLUG,
        "GPU hardware",
        "Temperature, power, clocks, throttling and errors per GPU. "
        f"Above {limit} °C a GPU throttles the whole job: drain the node, have it replaced.",
        variables=[query_variable("host", "Host", q.dcgm("DCGM_FI_DEV_GPU_TEMP"), s.h)],
    )
    board.row("Temperature", *temperature(s))
    board.row("Power, clocks and throttling", *power_and_clocks(s))
    board.row("Errors", *errors(s))
    return board.build()
