"""GPU health: the talk's 78 °C rule drawn as a line, and every signal that says 'replace'."""

from __future__ import annotations

from typing import Any

from generators.components.dashboards.panels import Board, Query, graph, grid, legend, query_variable, single
from generators.components.promql import DCGM_BLANK_MIN, Queries, quote
from generators.model.types import Environment

SLUG = "gpu-health"
NOT_IDLE = 'clock_event!="gpu_idle"'  # an idle GPU lowering its clocks is not a problem


def build(env: Environment) -> dict[str, Any]:
    q = Queries(env)
    m, h = q.m, q.m.host_label
    host = f"{h}=~{quote('$host')}"
    limit = m.gpu_temp_limit_celsius
    by_gpu = f"{h}, gpu"
    per_gpu = legend(h) + " GPU {{gpu}}"
    temp = q.temp_plausible("DCGM_FI_DEV_GPU_TEMP", host)
    board = Board(
        m,
        SLUG,
        "GPU health",
        "Temperature, power, clocks, throttling and errors per GPU. "
        f"Above {limit} °C a GPU throttles the whole job: drain the node, have it replaced.",
        variables=[query_variable("host", "Host", q.dcgm("DCGM_FI_DEV_GPU_TEMP"), h)],
    )
    board.row(
        "Temperature",
        graph(
            "GPU temperature",
            f"Per GPU; the red line is the {limit} °C limit (GPUTemperatureHigh).",
            "celsius",
            [Query(f"max by ({by_gpu}) ({temp})", per_gpu)],
            limit=limit,
            span=12,
        ),
        single(
            f"GPUs above {limit} °C",
            "Count of GPUs over the limit now; each one should be drained.",
            "none",
            Query(f"count({temp} > {limit}) or vector(0)"),
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
            Query(
                f"count({q.gpus_seen_per_node()} < on (node) group_left (pool, expected) "
                f"{q.expected_gpus_per_node()}) or vector(0)"
            ),
            limit=1,
            span=4,
        ),
        graph(
            "HBM temperature",
            "Memory (HBM) temperature per GPU.",
            "celsius",
            [Query(f"max by ({by_gpu}) {q.temp_plausible('DCGM_FI_DEV_MEMORY_TEMP', host)}", per_gpu)],
        ),
    )
    board.row(
        "Power, clocks and throttling",
        graph(
            "Power draw",
            "Per GPU.",
            "watt",
            [Query(f"max by ({by_gpu}) ({q.dcgm('DCGM_FI_DEV_POWER_USAGE', host)})", per_gpu)],
        ),
        graph(
            "SM clock",
            "Per GPU; a drop under load means throttling.",
            "hertz",
            [Query(f"max by ({by_gpu}) ({q.dcgm('DCGM_FI_DEV_SM_CLOCK', host)}) * 1e6", per_gpu)],
        ),
        graph(
            "Time throttled",
            "Share of time throttled by temperature or power (DCGM violation counters).",
            "percentunit",
            [
                Query(
                    f"max by ({by_gpu}) (rate({q.dcgm('DCGM_FI_DEV_THERMAL_VIOLATION', host)}"
                    f"[$__rate_interval]) / 1e9)",
                    per_gpu + " thermal",
                ),
                Query(
                    f"max by ({by_gpu}) (rate({q.dcgm('DCGM_FI_DEV_POWER_VIOLATION', host)}"
                    f"[$__rate_interval]) / 1e9)",
                    per_gpu + " power",
                ),
            ],
            limit=m.alerts.thermal_throttle_percent / 100,
        ),
        graph(
            "Throttle reasons",
            "Clock events per host and reason within dcgm-exporter's count window.",
            "none",
            [
                Query(
                    f"sum by ({h}, clock_event) ({q.dcgm('DCGM_EXP_CLOCK_EVENTS_COUNT', host, NOT_IDLE)})",
                    legend(h) + " {{clock_event}}",
                )
            ],
        ),
    )
    board.row(
        "Errors",
        grid(
            "XID errors in range",
            "XIDs per GPU in the selected range; replace codes: "
            + ", ".join(str(c) for c in m.xid_replace_codes)
            + ".",
            "none",
            [
                Query(
                    f"max by ({by_gpu}, xid) (max_over_time("
                    f"{q.dcgm('DCGM_EXP_XID_ERRORS_COUNT', host)}[$__range])) > 0"
                )
            ],
            ["Count"],
        ),
        graph(
            "Row remapping",
            "Remapped rows (uncorrectable errors mean a reset, failure means replace).",
            "none",
            [
                Query(f"max by ({by_gpu}) ({q.dcgm(metric, host)} < {DCGM_BLANK_MIN})", f"{per_gpu} {name}")
                for name, metric in (
                    ("uncorrectable", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"),
                    ("correctable", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"),
                    ("failed", "DCGM_FI_DEV_ROW_REMAP_FAILURE"),
                )
            ],
        ),
    )
    return board.build()
