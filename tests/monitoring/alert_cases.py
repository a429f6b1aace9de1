"""promtool unit-test cases for every alert, built from the SPEC values (the environment
file with schema defaults), not from the generated rules: a rule whose threshold, `for`,
selector or label drifts from the spec fails here.

Each alert gets at least one case that fires above its threshold (checking labels and
expanded annotations) and one that stays silent at or below it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

DCGM_PLACEHOLDER = 9223372036854775794  # what old dcgm-exporters report for "no value"


@dataclass(frozen=True)
class Expect:
    labels: dict[str, str]  # every label of the alert except alertname (severity included)
    value: str = ""  # what {{ $value | humanize }} (or humanizePercentage) expands to


@dataclass(frozen=True)
class Case:
    alert: str
    title: str
    series: list[tuple[str, str]]  # (series, promtool values notation at 1m steps)
    eval_minutes: int
    fires: list[Expect] = field(default_factory=list)  # empty: must stay silent


def seconds(duration: str) -> int:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
    return int(sum(int(n) * units[u] for n, u in re.findall(r"(\d+)(ms|s|m|h|d|w|y)", duration)))


def minutes(duration: str) -> int:
    return -(-seconds(duration) // 60)  # ceiling


def equality_matchers(text: str) -> dict[str, str]:
    """job="x", a="b" -> {job: x, a: b}; synthetic series need labels they can carry."""
    pairs = re.findall(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)\s*"((?:[^"\\]|\\.)*)"\s*,?', text)
    if any(op != "=" for _, op, _ in pairs):
        raise ValueError(f"tests need equality selectors, got {text!r}")
    return {name: value for name, _, value in pairs}


def series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def humanize(value: float) -> str:
    """Prometheus' humanize for 1 <= |value| < 1000 (no SI prefix): %.4g."""
    assert value == 0 or 1 <= abs(value) < 1000, value
    return f"{value:.4g}"


def ksm_label(key: str) -> str:
    """kube-state-metrics names a node label label_<key with every other char as _>."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


class Builder:
    """Cases for one environment."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.mon = spec["monitoring"]
        self.alerts = self.mon["alerts"]
        sel = self.mon["selectors"]
        self.dcgm_job = equality_matchers(sel["dcgm"])
        self.node_job = equality_matchers(sel["nodeExporter"])
        self.ksm_job = equality_matchers(sel["kubeStateMetrics"])
        self.kueue_job = equality_matchers(sel["kueue"])
        self.host = self.mon["hostLabel"]
        self.node_host = self.mon["nodeExporterHostLabel"]
        self.window = minutes(self.alerts["errorWindow"])

    def gpu(self, node: str = "node-a", index: int = 0) -> dict[str, str]:
        return {
            **self.dcgm_job,
            self.host: node,
            "gpu": str(index),
            "UUID": f"GPU-{node}-{index}",
            "modelName": "NVIDIA H100 80GB HBM3",
            "namespace": "team",
            "pod": "trainer-0",
        }

    def gpu_alert(self, severity: str, node: str = "node-a", index: int = 0, **extra: str) -> dict[str, str]:
        return {
            self.host: node,
            "gpu": str(index),
            "UUID": f"GPU-{node}-{index}",
            "severity": severity,
            **extra,
        }

    def temperature(self) -> list[Case]:
        limit = self.mon["gpuTempLimitCelsius"]
        hold = minutes(self.alerts["gpuTempFor"])
        temp = series("DCGM_FI_DEV_GPU_TEMP", self.gpu())
        end = hold + 10
        return [
            Case(
                "GPUTemperatureHigh",
                "one degree above the limit, long enough",
                [(temp, f"{limit + 1}x{end}")],
                end,
                [Expect(self.gpu_alert("critical"), humanize(limit + 1))],
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
                [Expect(self.gpu_alert("critical"), humanize(limit + 1))],
            ),
            Case(
                "GPUTemperatureHigh",
                "a DCGM placeholder is not a temperature",
                [(temp, f"{DCGM_PLACEHOLDER}x{end}")],
                end,
            ),
        ]

    def throttling(self) -> list[Case]:
        percent = self.alerts["thermalThrottlePercent"]
        hold = minutes(self.alerts["thermalThrottleFor"])
        counter = series("DCGM_FI_DEV_THERMAL_VIOLATION", self.gpu())
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
                [Expect(self.gpu_alert("warning"), f"{above * 100:.4g}%")],
            ),
            Case(
                "GPUThermalThrottling",
                "throttled half the allowed share",
                [(counter, slope(percent / 200))],
                end,
            ),
        ]

    def xid(self) -> list[Case]:
        codes = self.mon["xidReplaceCodes"]
        benign = next(c for c in (13, 31, 43, 45, 999) if c not in codes)
        end = 20

        def count(code: int) -> str:
            return series("DCGM_EXP_XID_ERRORS_COUNT", {**self.gpu(), "xid": str(code)})

        return [
            Case(
                "GPUXidRequiresReplacement",
                f"XID {code} is on the replace list",
                [(count(code), f"0x10 1x{end - 10}")],
                end,
                [Expect(self.gpu_alert("critical", xid=str(code)))],
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

    def memory(self) -> list[Case]:
        end = 20
        dbe = series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", self.gpu())
        failure = series("DCGM_FI_DEV_ROW_REMAP_FAILURE", self.gpu())
        fired = [Expect(self.gpu_alert("critical"))]
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
            Case(
                "GPUUncorrectableMemoryErrors",
                "a DCGM placeholder is not an error count",
                [(dbe, f"3x15 {DCGM_PLACEHOLDER}x{end - 15}")],
                end,
            ),
        ]

    def nvlink(self) -> list[Case]:
        limit = self.alerts["nvlinkErrorsPerWindow"]
        end = self.window + 20
        crc = series("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", self.gpu())
        step = limit // self.window + 1  # errors per minute: window * step > limit
        quiet = f"1000+{max(limit - 1, 0) // self.window}x{end}"
        return [
            Case(
                "NVLinkErrors",
                "CRC flit errors above the threshold",
                [(crc, f"1000+{step}x{end}")],
                end,
                [Expect(self.gpu_alert("warning", counter="crc_flit"), humanize(step * self.window))],
            ),
            Case("NVLinkErrors", "errors below the threshold", [(crc, quiet)], end),
        ]

    def pool(self) -> dict[str, Any]:
        return dict(self.spec["pools"][0])

    def node_labels(self, node: str) -> str:
        labels = {**self.ksm_job, "node": node}
        labels.update({ksm_label(k): v for k, v in self.pool()["nodeLabels"].items()})
        return series("kube_node_labels", labels)

    def missing(self) -> list[Case]:
        pool = self.pool()
        per_node = pool["gpu"]["perNode"]
        end = minutes(self.alerts["gpuMissingFor"]) + 5
        labels = self.node_labels("node-a")
        temps = [
            (series("DCGM_FI_DEV_GPU_TEMP", self.gpu("node-a", i)), f"50x{end}") for i in range(per_node)
        ]
        capacity = series(
            "kube_node_status_capacity",
            {
                **self.ksm_job,
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

    def profiling(self) -> list[Case]:
        end = minutes(self.alerts["profilingMissingFor"]) + 5
        temp = (series("DCGM_FI_DEV_GPU_TEMP", self.gpu()), f"50x{end}")
        sm = (series("DCGM_FI_PROF_SM_ACTIVE", self.gpu()), f"0.5x{end}")
        return [
            Case(
                "DCGMProfilingMetricsMissing",
                "temperatures but no SM activity",
                [temp],
                end,
                [Expect({self.host: "node-a", "severity": "warning"})],
            ),
            Case("DCGMProfilingMetricsMissing", "profiling metrics present", [temp, sm], end),
        ]

    def ib_port(self, device: str = "mlx5_0") -> dict[str, str]:
        return {**self.node_job, self.node_host: "node-a", "device": device, "port": "1"}

    def ib_port_state(self) -> list[Case]:
        end = minutes(self.alerts["infinibandPortDownFor"]) + 5
        fired = [Expect({self.node_host: "node-a", "device": "mlx5_0", "port": "1", "severity": "critical"})]

        def port(state: int, physical: int, device: str = "mlx5_0") -> list[tuple[str, str]]:
            return [
                (series("node_infiniband_state_id", self.ib_port(device)), f"{state}x{end}"),
                (series("node_infiniband_physical_state_id", self.ib_port(device)), f"{physical}x{end}"),
            ]

        cases = [
            Case("InfiniBandPortNotActive", "port DOWN", port(1, 3), end, fired),
            Case("InfiniBandPortNotActive", "ACTIVE but link training", port(4, 4), end, fired),
            Case("InfiniBandPortNotActive", "ACTIVE and LinkUp", port(4, 5), end),
        ]
        if not re.fullmatch(self.mon["infinibandDevices"], "lo0"):
            cases.append(
                Case("InfiniBandPortNotActive", "a device outside the filter", port(1, 3, "lo0"), end)
            )
        return cases

    def ib_errors(self) -> list[Case]:
        limit = self.alerts["infinibandErrorsPerWindow"]
        end = self.window + 20
        symbol = series("node_infiniband_symbol_error_total", self.ib_port())
        step = limit // self.window + 1  # errors per minute: window * step > limit
        quiet = max(limit - 1, 0) // self.window  # window * quiet < limit: clear of float noise
        return [
            Case(
                "InfiniBandLinkErrors",
                "symbol errors above the threshold",
                [(symbol, f"100+{step}x{end}")],
                end,
                [
                    Expect(
                        {
                            self.node_host: "node-a",
                            "device": "mlx5_0",
                            "port": "1",
                            "counter": "symbol_error",
                            "severity": "warning",
                        },
                        humanize(step * self.window),
                    )
                ],
            ),
            Case(
                "InfiniBandLinkErrors",
                "symbol errors below the threshold",
                [(symbol, f"100+{quiet}x{end}")],
                end,
            ),
        ]

    def gpu_resource_ksm(self) -> str:
        return re.sub(r"[^a-zA-Z0-9_]", "_", self.pool()["gpu"]["resource"])

    def usable_node(
        self, node: str, end: int, *, unschedulable: int = 0, ready: str = "1"
    ) -> list[tuple[str, str]]:
        per_node = self.pool()["gpu"]["perNode"]
        base = {**self.ksm_job, "node": node}
        return [
            (self.node_labels(node), f"1x{end}"),
            (
                series(
                    "kube_node_status_allocatable",
                    {**base, "resource": self.gpu_resource_ksm(), "unit": "integer"},
                ),
                f"{per_node}x{end}",
            ),
            (series("kube_node_spec_unschedulable", base), f"{unschedulable}x{end}"),
            (
                series("kube_node_status_condition", {**base, "condition": "Ready", "status": "true"}),
                f"{ready}x{end}",
            ),
        ]

    def quota_drift(self) -> list[Case]:
        pool = self.pool()
        per_node = pool["gpu"]["perNode"]
        end = minutes(self.alerts["quotaDriftFor"]) + 5
        nominal = (
            series(
                "kueue_cluster_queue_nominal_quota",
                {
                    **self.kueue_job,
                    "cohort": "c",
                    "cluster_queue": "team-a",
                    "flavor": pool["name"],
                    "resource": pool["gpu"]["resource"],
                },
            ),
            f"{2 * per_node}x{end}",
        )
        fired = [Expect({"flavor": pool["name"], "severity": "warning"}, humanize(2 * per_node))]
        two = self.usable_node("node-a", end)
        return [
            Case(
                "KueueQuotaDrift",
                "quota equals two usable nodes",
                [nominal, *two, *self.usable_node("node-b", end)],
                end,
            ),
            Case(
                "KueueQuotaDrift",
                "one of the two nodes cordoned",
                [nominal, *two, *self.usable_node("node-b", end, unschedulable=1)],
                end,
                fired,
            ),
            Case(
                "KueueQuotaDrift",
                "one of the two nodes NotReady",
                [nominal, *two, *self.usable_node("node-b", end, ready="0")],
                end,
                fired,
            ),
        ]

    def gang(self) -> list[Case]:
        limit = self.alerts["podsReadyTimeoutEvictionsPerHour"]
        end = 90
        evictions = series(
            "kueue_evicted_workloads_total",
            {**self.kueue_job, "cluster_queue": "team-a", "reason": "PodsReadyTimeout"},
        )
        preempted = series(
            "kueue_evicted_workloads_total",
            {**self.kueue_job, "cluster_queue": "team-a", "reason": "Preempted"},
        )
        step = limit // 60 + 1  # evictions per minute: 60 * step > limit
        return [
            Case(
                "KueueGangAdmissionFailing",
                "gangs time out",
                [(evictions, f"0+{step}x{end}")],
                end,
                [Expect({"cluster_queue": "team-a", "severity": "warning"}, humanize(60 * step))],
            ),
            Case(
                "KueueGangAdmissionFailing",
                "preemptions are not gang failures",
                [(preempted, f"0+{step}x{end}"), (evictions, f"0+{max(limit - 1, 0) // 60}x{end}")],
                end,
            ),
        ]

    def inference_pending(self) -> list[Case]:
        tiers = self.spec["priorities"]["tiers"]
        inference = next(t["name"] for t in tiers if t["role"] == "inference")
        training = next(t["name"] for t in tiers if t["role"] == "training")
        end = minutes(self.alerts["inferencePendingFor"]) + 5

        def pod(name: str, priority_class: str, pending: int) -> list[tuple[str, str]]:
            base = {**self.ksm_job, "namespace": "serving", "pod": name}
            return [
                (series("kube_pod_info", {**base, "priority_class": priority_class, "node": ""}), f"1x{end}"),
                (series("kube_pod_status_phase", {**base, "phase": "Pending"}), f"{pending}x{end}"),
                (series("kube_pod_status_phase", {**base, "phase": "Running"}), f"{1 - pending}x{end}"),
            ]

        return [
            Case(
                "InferencePendingTooLong",
                "an inference pod stays Pending",
                pod("web-0", inference, 1),
                end,
                [
                    Expect(
                        {
                            "namespace": "serving",
                            "pod": "web-0",
                            "priority_class": inference,
                            "severity": "warning",
                        }
                    )
                ],
            ),
            Case(
                "InferencePendingTooLong",
                "running inference and pending training",
                [*pod("web-1", inference, 0), *pod("train-0", training, 1)],
                end,
            ),
        ]

    def exporters(self) -> list[Case]:
        end = minutes(self.alerts["exporterDownFor"]) + 5
        jobs = {
            "dcgm-exporter": self.dcgm_job,
            "node-exporter": self.node_job,
            "kube-state-metrics": self.ksm_job,
            "kueue": self.kueue_job,
        }
        if "overflow" in self.spec:  # the gate's Service is called overflow-gate
            jobs["overflow-gate"] = {"job": "overflow-gate", "namespace": self.spec["overflow"]["namespace"]}
        cases = []
        for exporter, job in jobs.items():
            healthy = [
                (series("up", {**other, "instance": "10.0.0.1:9100"}), f"1x{end}")
                for name, other in jobs.items()
                if name != exporter
            ]
            mine = series("up", {**job, "instance": "10.0.0.2:9400"})
            cases += [
                Case(
                    "ExporterDown",
                    f"{exporter} fails its scrapes",
                    [*healthy, (mine, f"0x{end}")],
                    end,
                    [
                        Expect(
                            {**job, "instance": "10.0.0.2:9400", "exporter": exporter, "severity": "warning"}
                        )
                    ],
                ),
                Case(
                    "ExporterDown",
                    f"{exporter} vanished from discovery",
                    healthy,
                    end,
                    [Expect({**job, "exporter": exporter, "severity": "warning"})],
                ),
                Case("ExporterDown", f"{exporter} up", [*healthy, (mine, f"1x{end}")], end),
            ]
        return cases

    def gate_flapping(self) -> list[Case]:
        limit = self.alerts["gateTransitionsPerHour"]
        gate = next(p["name"] for p in self.spec["overflow"]["providers"])
        job = {"job": "overflow-gate", "namespace": self.spec["overflow"]["namespace"]}
        end = 90

        def transitions(per_hour: int) -> list[tuple[str, str]]:  # split over both directions
            return [
                (
                    series("trainyard_gate_transitions_total", {**job, "gate": gate, "direction": d}),
                    f"0+{per_hour / 120}x{end}",
                )
                for d in ("open", "close")
            ]

        return [
            Case(
                "OverflowGateFlapping",
                "twice the allowed transitions",
                transitions(2 * limit),
                end,
                [Expect({"gate": gate, "severity": "warning"}, humanize(2 * limit))],
            ),
            Case("OverflowGateFlapping", "half the allowed transitions", transitions(limit // 2), end),
        ]

    def virtual_node(self) -> list[Case]:
        end = minutes(self.alerts["virtualNodeNotReadyFor"]) + 5
        node = "vk-" + next(p["name"] for p in self.spec["overflow"]["providers"])

        def ready(value: int, name: str = node) -> tuple[str, str]:
            labels = {**self.ksm_job, "node": name, "condition": "Ready", "status": "true"}
            return (series("kube_node_status_condition", labels), f"{value}x{end}")

        return [
            Case(
                "VirtualNodeNotReady",
                "virtual node NotReady",
                [ready(0)],
                end,
                [Expect({"node": node, "severity": "warning"})],
            ),
            Case("VirtualNodeNotReady", "virtual node Ready", [ready(1)], end),
            Case(
                "VirtualNodeNotReady", "a real node NotReady is not a virtual node", [ready(0, "gpu-1")], end
            ),
        ]

    def all(self) -> list[Case]:
        overflow = [*self.gate_flapping(), *self.virtual_node()] if "overflow" in self.spec else []
        return [
            *overflow,
            *self.temperature(),
            *self.throttling(),
            *self.xid(),
            *self.memory(),
            *self.nvlink(),
            *self.missing(),
            *self.profiling(),
            *self.ib_port_state(),
            *self.ib_errors(),
            *self.quota_drift(),
            *self.gang(),
            *self.inference_pending(),
            *self.exporters(),
        ]


def expand(template: str, labels: dict[str, str], value: str) -> str:
    """Alert template expansion, as far as our annotations use it."""
    text = re.sub(
        r"\{\{ \$labels\.([a-zA-Z_][a-zA-Z0-9_]*) \}\}", lambda m: labels.get(m.group(1), ""), template
    )
    return re.sub(r"\{\{ \$value \| humanize(Percentage)? \}\}", value, text)


def annotations_of(rules: list[dict[str, Any]], alert: str, labels: dict[str, str]) -> dict[str, str]:
    """The annotations of the one rule named `alert` whose static labels the alert carries."""
    found = [
        r
        for r in rules
        if r.get("alert") == alert and all(labels.get(k) == v for k, v in r.get("labels", {}).items())
    ]
    assert len(found) == 1, f"{alert} {labels}: {len(found)} rules match"
    return dict(found[0]["annotations"])


def promtool_tests(cases: list[Case], rules: list[dict[str, Any]], rule_file: str) -> dict[str, Any]:
    """A promtool test file: one test per case (its own series), one alert_rule_test each."""
    tests = []
    for case in cases:
        expected = []
        for exp in case.fires:
            notes = annotations_of(rules, case.alert, exp.labels)
            expected.append(
                {
                    "exp_labels": exp.labels,
                    "exp_annotations": {k: expand(v, exp.labels, exp.value) for k, v in notes.items()},
                }
            )
        tests.append(
            {
                "name": f"{case.alert}: {case.title}",
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in case.series],
                "alert_rule_test": [
                    {"eval_time": f"{case.eval_minutes}m", "alertname": case.alert, "exp_alerts": expected}
                ],
            }
        )
    return {"rule_files": [rule_file], "evaluation_interval": "1m", "tests": tests}
