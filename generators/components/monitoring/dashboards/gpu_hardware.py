"""GPU hardware: the talk's 78 °C rule drawn as a line, and every signal that says 'replace'."""

from __future__ import annotations

from generators.components.monitoring.dashboards import panels as g
from generators.components.monitoring.promql import Queries
from generators.model.promql import below_blank, share_of_time, unless_blank

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
        self.host = g.matches(self.h, "host")
        self.by_gpu = f"{self.h}, gpu"
        self.legend = g.legend(self.h) + " GPU {{gpu}}"

    def per_gpu(self, metric: str, *extra: str) -> str:
        return f"max by ({self.by_gpu}) ({self.q.dcgm(metric, self.host, *extra)})"


def temperature(q: Queries) -> list[g.Panel]:
    s = _Scope(q)
    limit = q.m.gpu_temp_limit_celsius
    temp = q.temp_plausible("DCGM_FI_DEV_GPU_TEMP", s.host)
    too_hot = q.gpu_too_hot(lambda plausible: plausible, s.host)
    return [
        g.graph(
            "GPU temperature",
            f"Per GPU; the red line is the {limit} °C limit (GPUTemperatureHigh).",
            [g.Query(f"max by ({s.by_gpu}) ({temp})", s.legend)],
            unit="celsius",
            limit=limit,
        ),
        g.count(
            f"GPUs above {limit} °C",
            "Count of GPUs over the limit now; each one should be drained.",
            too_hot,
            limit=1,
            span=4,
        ),
        g.single(
            "Hottest GPU",
            "Highest GPU temperature now.",
            g.Query(f"max({temp})"),
            unit="celsius",
            limit=limit,
            span=4,
        ),
        g.count(
            "Nodes missing GPUs",
            "Nodes showing fewer GPUs than their pool's perNode (GPUMissing).",
            q.nodes_missing_gpus(),
            limit=1,
            span=4,
        ),
        g.graph(
            "HBM temperature",
            "Memory (HBM) temperature per GPU.",
            [g.Query(f"max by ({s.by_gpu}) {q.temp_plausible('DCGM_FI_DEV_MEMORY_TEMP', s.host)}", s.legend)],
            unit="celsius",
        ),
    ]


def power_and_clocks(q: Queries) -> list[g.Panel]:
    s = _Scope(q)

    def throttled(metric: str) -> str:
        series = q.dcgm(metric, s.host)
        return f"max by ({s.by_gpu}) {unless_blank(series, share_of_time(series, '$__rate_interval'))}"

    events = f"sum by ({s.h}, clock_event) ({q.dcgm('DCGM_EXP_CLOCK_EVENTS_COUNT', s.host, NOT_IDLE)})"
    return [
        g.graph(
            "Power draw", "Per GPU.", [g.Query(s.per_gpu("DCGM_FI_DEV_POWER_USAGE"), s.legend)], unit="watt"
        ),
        g.graph(
            "SM clock",
            "Per GPU; a drop under load means throttling.",
            [g.Query(f"{s.per_gpu('DCGM_FI_DEV_SM_CLOCK')} * 1e6", s.legend)],
            unit="hertz",
        ),
        g.graph(
            "Time throttled",
            "Share of time throttled by temperature or power (DCGM violation counters).",
            [
                g.Query(throttled("DCGM_FI_DEV_THERMAL_VIOLATION"), s.legend + " thermal"),
                g.Query(throttled("DCGM_FI_DEV_POWER_VIOLATION"), s.legend + " power"),
            ],
            unit="percentunit",
            limit=q.m.alerts.thermal_throttle_percent / 100,
        ),
        g.graph(
            "Throttle reasons",
            "Clock events per host and reason within dcgm-exporter's count window.",
            [g.Query(events, g.legend(s.h) + " {{clock_event}}")],
        ),
    ]


def errors(q: Queries) -> list[g.Panel]:
    s = _Scope(q)
    codes = ", ".join(str(c) for c in q.m.xid_replace_codes)
    xids = (
        f"max by ({s.by_gpu}, xid) (max_over_time("
        f"{q.dcgm('DCGM_EXP_XID_ERRORS_COUNT', s.host)}[$__range])) > 0"
    )
    return [
        g.grid(
            "XID errors in range",
            f"XIDs per GPU in the selected range; replace codes: {codes}.",
            [g.Query(xids)],
            ["Count"],
        ),
        g.graph(
            "Row remapping",
            "Remapped rows (uncorrectable errors mean a reset, failure means replace).",
            [
                g.Query(f"max by ({s.by_gpu}) ({below_blank(q.dcgm(metric, s.host))})", f"{s.legend} {name}")
                for name, metric in REMAP_SERIES
            ],
        ),
    ]


DASHBOARD = g.Dashboard(
    "gpu-hardware",  # not "gpu-health": that names the health controller (components/health.py)
    "GPU hardware",
    "Temperature, power, clocks, throttling and errors per GPU. "
    "Above {m.gpu_temp_limit_celsius} °C a GPU throttles the whole job: drain the node, have it replaced.",
    rows=(
        ("Temperature", temperature),
        ("Power, clocks and throttling", power_and_clocks),
        ("Errors", errors),
    ),
    variables=lambda q: [g.query_variable("host", "Host", q.dcgm("DCGM_FI_DEV_GPU_TEMP"), q.m.host_label)],
)
