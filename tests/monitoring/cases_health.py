"""promtool cases for the health alerts (backend trainyard), from the spec values.

The condition alerts run the controller's own queries with `for:` = quarantineAfterSeconds:
each case shows an edge of a quarantine decision (at the limit is not above it; bad exactly
as long as the duration fires, one sample less does not; one node of two). The release edge
is GpuHealthNotReleased: healthy for releaseAfterSeconds plus two passes, still tainted.
Cases are only built for environments whose health backend is trainyard.
"""

from __future__ import annotations

from typing import Any

from tests.monitoring.alert_cases import Builder, Case, Controller, Expect, humanize, series


def _minutes_of(seconds: int) -> int:
    assert seconds % 60 == 0, "the shipped durations are whole minutes (promtool steps are 1m)"
    return seconds // 60


class Health:
    def __init__(self, b: Builder) -> None:
        self.b = b
        self.h: dict[str, Any] = b.spec["health"]
        self.interval = self.h["reconcileIntervalSeconds"]
        self.controller = Controller(
            b, {"job": "gpu-health", "namespace": self.h["namespace"]}, self.interval
        )
        self.metric = self.controller.metric

    def after(self, key: str) -> int:
        return _minutes_of(self.h["conditions"][key]["quarantineAfterSeconds"])

    def labels(self, reason: str, node: str = "node-a") -> dict[str, str]:
        """The labels of a condition alert fired for `node`."""
        return {"node": node, "reason": reason, "severity": "warning"}

    def over_window(
        self, alert: str, counter: str, limit_key: str, what: str, labels: dict[str, str], hold: int
    ) -> list[Case]:
        """Builder.over_window for a condition alert: its `for` is quarantineAfterSeconds, and
        its texts show no value."""
        return self.b.over_window(alert, counter, limit_key, what, labels, hold=hold, shows_value=False)

    def fired(self, reason: str, node: str = "node-a") -> list[Expect]:
        return [Expect(self.labels(reason, node))]


def temperature(hc: Health) -> list[Case]:
    b, name, reason = hc.b, "GpuHealthGpuTemperature", "gpu-temperature"
    limit, hold = b.mon["gpuTempLimitCelsius"], hc.after("gpuTemperature")
    hot, cool = (
        series("DCGM_FI_DEV_GPU_TEMP", b.gpu("node-a", 3)),
        series("DCGM_FI_DEV_GPU_TEMP", b.gpu("node-b")),
    )
    rise = f"{limit - 5}x9 {limit + 1}x{hold + 5}"
    end = 10 + hold + 5
    return [
        Case(
            name,
            "one GPU one degree above the limit: that node only",
            [(hot, f"{limit + 1}x{end}"), (cool, f"{limit - 10}x{end}")],
            end,
            hc.fired(reason),
        ),
        Case(name, "at the limit is not above it", [(hot, f"{limit}x{end}")], end),
        Case(
            name, "hot exactly as long as quarantineAfterSeconds", [(hot, rise)], 10 + hold, hc.fired(reason)
        ),
        Case(name, "one sample less", [(hot, rise)], 10 + hold - 1),
        Case(
            name,
            "one good sample restarts the timer",
            [(hot, f"{limit + 1}x{hold - 1} {limit} {limit + 1}x{hold + 5}")],
            hold + hold,
        ),
        b.dcgm_blank(name, "a temperature", hot, end),
    ]


def xid(hc: Health) -> list[Case]:
    b, name, reason = hc.b, "GpuHealthXid", "xid"
    hold = hc.after("xid")
    code = b.mon["xidReplaceCodes"][0]
    benign = next(c for c in (13, 31, 43, 45, 999) if c not in b.mon["xidReplaceCodes"])
    end = 20

    def count(c: int) -> str:
        return series("DCGM_EXP_XID_ERRORS_COUNT", {**b.gpu(), "xid": str(c)})

    return [
        Case(
            name, f"XID {code} quarantines", [(count(code), f"0x9 1x{end - 10}")], 10 + hold, hc.fired(reason)
        ),
        Case(name, "one sample before the XID", [(count(code), f"0x9 1x{end - 10}")], 10 + hold - 1),
        Case(name, f"XID {benign} does not", [(count(benign), f"0x10 1x{end - 10}")], end),
    ]


def nvlink(hc: Health) -> list[Case]:
    b, name, hold = hc.b, "GpuHealthNvlinkErrors", hc.after("nvlinkErrors")
    end = b.window + 20 + hold
    crc = series("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", b.gpu())
    return [
        *hc.over_window(name, crc, "nvlinkErrorsPerWindow", "CRC errors", hc.labels("nvlink"), hold),
        b.dcgm_blank(name, "an error count", crc, end, counter=True, hold=hold),
    ]


def ib_port(hc: Health) -> list[Case]:
    b, name, reason = hc.b, "GpuHealthInfinibandPortDown", "infiniband-port-down"
    hold = hc.after("infinibandPortDown")
    state = series("node_infiniband_state_id", b.ib_port())
    physical = series("node_infiniband_physical_state_id", b.ib_port())
    end = 10 + hold + 5
    down = [(state, f"4x9 1x{hold + 5}"), (physical, f"5x9 3x{hold + 5}")]
    node = b.ib_port()[b.node_host]
    return [
        Case(name, "down exactly as long as quarantineAfterSeconds", down, 10 + hold, hc.fired(reason, node)),
        Case(name, "one sample less", down, 10 + hold - 1),
        Case(name, "ACTIVE and LinkUp", [(state, f"4x{end}"), (physical, f"5x{end}")], end),
    ]


def ib_errors(hc: Health) -> list[Case]:
    b, hold = hc.b, hc.after("infinibandLinkErrors")
    symbol = series("node_infiniband_symbol_error_total", b.ib_port())
    fired = hc.labels("infiniband-link-errors", b.ib_port()[b.node_host])
    limit = "infinibandErrorsPerWindow"
    return hc.over_window("GpuHealthInfinibandLinkErrors", symbol, limit, "symbol errors", fired, hold)


def release(hc: Health) -> list[Case]:
    """Quarantined node-a, its GPU at the limit (healthy): the alert waits releaseAfterSeconds
    plus two passes; a hot sample in between restarts the wait."""
    b, name = hc.b, "GpuHealthNotReleased"
    wait = -(-(hc.h["releaseAfterSeconds"] + 2 * hc.interval) // 60)
    limit = b.mon["gpuTempLimitCelsius"]
    temp = series("DCGM_FI_DEV_GPU_TEMP", b.gpu())
    pool = b.spec["pools"][0]["name"]
    tainted = (
        hc.metric("trainyard_health_quarantined", node="node-a", pool=pool, reason="gpu-temperature"),
        f"1x{wait + 20}",
    )
    fired = [Expect({"node": "node-a", "pool": pool, "severity": "warning"})]
    return [
        Case(
            name,
            "healthy exactly the cool-down, still tainted",
            [tainted, (temp, f"{limit}x{wait + 20}")],
            wait,
            fired,
        ),
        Case(name, "one sample less", [tainted, (temp, f"{limit}x{wait + 20}")], wait - 1),
        Case(
            name,
            "a hot sample restarts the cool-down",
            [tainted, (temp, f"{limit}x9 {limit + 1} {limit}x{wait + 10}")],
            wait + 5,
        ),
        Case(name, "still hot: quarantine is right", [tainted, (temp, f"{limit + 1}x{wait + 20}")], wait + 5),
    ]


def controller(hc: Health) -> list[Case]:
    b = hc.b
    pools = b.spec["pools"]
    watched = hc.h.get("pools") or [p["name"] for p in pools if p["role"] in ("training", "shared")]
    pool = next(p for p in pools if p["name"] == watched[0])
    reserve = pool["reserveNodes"]
    hold = -(-2 * hc.interval // 60)
    ctl = hc.controller
    end = max(hold + 10, ctl.end)

    def quarantined(count: int) -> list[tuple[str, str]]:
        return [
            (
                hc.metric("trainyard_health_quarantined", node=f"n{i}", pool=pool["name"], reason="xid"),
                f"1x{end}",
            )
            for i in range(count)
        ]

    held = hc.metric("trainyard_health_held_back", pool=pool["name"])
    over = {"pool": pool["name"], "severity": "warning"}
    return [
        Case(
            "GpuHealthCapHoldsBack",
            "two candidates held back for two passes",
            [(held, f"0 2x{end}")],
            1 + hold,
            [Expect(over, humanize(2))],
        ),
        Case("GpuHealthCapHoldsBack", "held back for one pass only", [(held, f"0 2x{end}")], hold),
        Case("GpuHealthCapHoldsBack", "nothing held back", [(held, f"0x{end}")], end),
        Case(
            "GpuHealthQuarantineExceedsReserve",
            "one more than the reserve",
            quarantined(reserve + 1),
            end,
            [Expect(over, humanize(reserve + 1))],
        ),
        Case("GpuHealthQuarantineExceedsReserve", "exactly the reserve", quarantined(reserve), end),
        *b.down("GpuHealthControllerDown", "gpu-health", ctl.job, end, {"severity": "warning"}),
        *ctl.no_leader("GpuHealthNoLeader", "trainyard_health_leader"),
        *ctl.blind(
            "GpuHealthBlind", "trainyard_health_last_success_timestamp_seconds", {"severity": "warning"}
        ),
        *ctl.failing("GpuHealthErrors", "trainyard_health_errors_total"),
    ]


def cases(b: Builder) -> list[Case]:
    if b.spec["health"]["backend"] != "trainyard":
        return []
    hc = Health(b)
    return [
        *temperature(hc),
        *xid(hc),
        *nvlink(hc),
        *ib_port(hc),
        *ib_errors(hc),
        *release(hc),
        *controller(hc),
    ]
