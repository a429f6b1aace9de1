"""promtool cases for the GPU alerts (dcgm-exporter), from the spec values."""

from __future__ import annotations

import re

from tests.monitoring.alert_cases import Builder, Case, Expect, humanize, minutes, series


def temperature(b: Builder) -> list[Case]:
    limit = b.mon["gpuTempLimitCelsius"]
    hold = minutes(b.alerts["gpuTempFor"])
    temp = series("DCGM_FI_DEV_GPU_TEMP", b.gpu())
    end = hold + 10
    return [
        Case(
            "GPUTemperatureHigh",
            "one degree above the limit, long enough",
            [(temp, f"{limit + 1}x{end}")],
            end,
            [Expect(b.gpu_alert("critical"), humanize(limit + 1))],
        ),
        Case("GPUTemperatureHigh", "at the limit is not above it", [(temp, f"{limit}x{end}")], end),
        Case(
            "GPUTemperatureHigh",
            "above the limit for less than the `for`",
            [(temp, f"{limit - 5}x9 {limit + 1}x{hold + 5}")],
            10 + hold - 1,
        ),
        Case(
            "GPUTemperatureHigh",
            "hot just as long as the `for`",
            [(temp, f"{limit - 5}x9 {limit + 1}x{hold + 5}")],
            10 + hold,
            [Expect(b.gpu_alert("critical"), humanize(limit + 1))],
        ),
        b.dcgm_blank("GPUTemperatureHigh", "a temperature", temp, end),
    ]


def throttling(b: Builder) -> list[Case]:
    percent = b.alerts["thermalThrottlePercent"]
    hold = minutes(b.alerts["thermalThrottleFor"])
    counter = series("DCGM_FI_DEV_THERMAL_VIOLATION", b.gpu())
    end = hold + 15

    def slope(fraction: float) -> str:  # ns of throttling per 1m step
        return f"0+{int(fraction * 60e9)}x{end}"

    above = min(percent * 2, 100) / 100
    return [
        Case(
            "GPUThermalThrottling",
            "throttled twice the allowed share",
            [(counter, slope(above))],
            end,
            [Expect(b.gpu_alert("warning"), f"{above * 100:.4g}%")],
        ),
        Case(
            "GPUThermalThrottling",
            "throttled half the allowed share",
            [(counter, slope(percent / 200))],
            end,
        ),
    ]


def xid(b: Builder) -> list[Case]:
    codes = b.mon["xidReplaceCodes"]
    benign = next(c for c in (13, 31, 43, 45, 999) if c not in codes)
    end = 20

    def count(code: int) -> str:
        return series("DCGM_EXP_XID_ERRORS_COUNT", {**b.gpu(), "xid": str(code)})

    return [
        Case(
            "GPUXidRequiresReplacement",
            f"XID {code} is on the replace list",
            [(count(code), f"0x10 1x{end - 10}")],
            end,
            [Expect(b.gpu_alert("critical", xid=str(code)))],
        )
        for code in codes
    ] + [
        Case(
            "GPUXidRequiresReplacement",
            f"XID {benign} is not",
            [(count(benign), f"0x10 1x{end - 10}")],
            end,
        )
    ]


def memory(b: Builder) -> list[Case]:
    end = 20
    dbe = series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", b.gpu())
    failure = series("DCGM_FI_DEV_ROW_REMAP_FAILURE", b.gpu())
    fired = [Expect(b.gpu_alert("critical"))]
    return [
        Case(
            "GPUUncorrectableMemoryErrors",
            "a double-bit ECC error",
            [(dbe, f"3x15 4x{end - 15}")],
            end,
            fired,
        ),
        Case(
            "GPUUncorrectableMemoryErrors",
            "row remapping failed",
            [(failure, f"0x10 1x{end - 10}")],
            end,
            fired,
        ),
        Case(
            "GPUUncorrectableMemoryErrors",
            "old errors only",
            [(dbe, f"3x{end}"), (failure, f"0x{end}")],
            end,
        ),
        b.dcgm_blank("GPUUncorrectableMemoryErrors", "an error count", dbe, end, counter=True),
    ]


def nvlink(b: Builder) -> list[Case]:
    crc = series("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", b.gpu())
    fired = b.gpu_alert("warning", counter="crc_flit")
    return [
        *b.over_window("NVLinkErrors", crc, "nvlinkErrorsPerWindow", "CRC flit errors", fired),
        b.dcgm_blank("NVLinkErrors", "an error count", crc, b.window + 20, counter=True),
    ]


def missing(b: Builder) -> list[Case]:
    pool = b.pool()
    per_node = pool["gpu"]["perNode"]
    end = minutes(b.alerts["gpuMissingFor"]) + 5
    labels = b.node_labels("node-a")
    temps = [(series("DCGM_FI_DEV_GPU_TEMP", b.gpu("node-a", i)), f"50x{end}") for i in range(per_node)]
    capacity = series(
        "kube_node_status_capacity",
        {
            **b.ksm_job,
            "node": "node-a",
            "resource": re.sub(r"[^a-zA-Z0-9_]", "_", pool["gpu"]["resource"]),
            "unit": "integer",
        },
    )
    fired = Expect(
        {"node": "node-a", "pool": pool["name"], "expected": str(per_node), "severity": "warning"},
        humanize(per_node - 1),
    )
    return [
        Case(
            "GPUMissing",
            "dcgm-exporter sees one GPU less",
            [(labels, f"1x{end}"), *temps[1:]],
            end,
            [fired],
        ),
        Case(
            "GPUMissing",
            "no dcgm-exporter: the device plugin sees one less",
            [(labels, f"1x{end}"), (capacity, f"{per_node - 1}x{end}")],
            end,
            [fired],
        ),
        Case("GPUMissing", "all GPUs there", [(labels, f"1x{end}"), *temps], end),
    ]


def profiling(b: Builder) -> list[Case]:
    end = minutes(b.alerts["profilingMissingFor"]) + 5
    temp = (series("DCGM_FI_DEV_GPU_TEMP", b.gpu()), f"50x{end}")
    sm = (series("DCGM_FI_PROF_SM_ACTIVE", b.gpu()), f"0.5x{end}")
    return [
        Case(
            "DCGMProfilingMetricsMissing",
            "temperatures but no SM activity",
            [temp],
            end,
            [Expect({b.host: "node-a", "severity": "warning"})],
        ),
        Case("DCGMProfilingMetricsMissing", "profiling metrics present", [temp, sm], end),
    ]


def cases(b: Builder) -> list[Case]:
    return [*temperature(b), *throttling(b), *xid(b), *memory(b), *nvlink(b), *missing(b), *profiling(b)]
