"""promtool cases for the fabric, scheduling, exporter and overflow alerts, from the spec values."""

from __future__ import annotations

import re

from tests.monitoring.alert_cases import Builder, Case, Controller, Expect, humanize, minutes, series


def ib_port_state(b: Builder) -> list[Case]:
    end = minutes(b.alerts["infinibandPortDownFor"]) + 5
    fired = [Expect({b.node_host: "node-a", "device": "mlx5_0", "port": "1", "severity": "critical"})]

    def port(state: int, physical: int, device: str = "mlx5_0") -> list[tuple[str, str]]:
        return [
            (series("node_infiniband_state_id", b.ib_port(device)), f"{state}x{end}"),
            (series("node_infiniband_physical_state_id", b.ib_port(device)), f"{physical}x{end}"),
        ]

    cases = [
        Case("InfiniBandPortNotActive", "port DOWN", port(1, 3), end, fired),
        Case("InfiniBandPortNotActive", "ACTIVE but link training", port(4, 4), end, fired),
        Case("InfiniBandPortNotActive", "ACTIVE and LinkUp", port(4, 5), end),
    ]
    if not re.fullmatch(b.mon["infinibandDevices"], "lo0"):
        cases.append(Case("InfiniBandPortNotActive", "a device outside the filter", port(1, 3, "lo0"), end))
    return cases


def ib_errors(b: Builder) -> list[Case]:
    symbol = series("node_infiniband_symbol_error_total", b.ib_port())
    port = {b.node_host: "node-a", "device": "mlx5_0", "port": "1"}
    fired = {**port, "counter": "symbol_error", "severity": "warning"}
    return b.over_window("InfiniBandLinkErrors", symbol, "infinibandErrorsPerWindow", "symbol errors", fired)


def quota_drift(b: Builder) -> list[Case]:
    pool = b.pool()
    per_node = pool["gpu"]["perNode"]
    end = minutes(b.alerts["quotaDriftFor"]) + 5
    nominal = (
        series(
            "kueue_cluster_queue_nominal_quota",
            {
                **b.kueue_job,
                "cohort": "c",
                "cluster_queue": "team-a",
                "flavor": pool["name"],
                "resource": pool["gpu"]["resource"],
            },
        ),
        f"{2 * per_node}x{end}",
    )
    fired = [Expect({"flavor": pool["name"], "severity": "warning"}, humanize(2 * per_node))]
    two = b.usable_node("node-a", end)
    return [
        Case(
            "KueueQuotaDrift",
            "quota equals two usable nodes",
            [nominal, *two, *b.usable_node("node-b", end)],
            end,
        ),
        Case(
            "KueueQuotaDrift",
            "one of the two nodes cordoned",
            [nominal, *two, *b.usable_node("node-b", end, unschedulable=1)],
            end,
            fired,
        ),
        Case(
            "KueueQuotaDrift",
            "one of the two nodes NotReady",
            [nominal, *two, *b.usable_node("node-b", end, ready="0")],
            end,
            fired,
        ),
    ]


def gang(b: Builder) -> list[Case]:
    limit = b.alerts["podsReadyTimeoutEvictionsPerHour"]
    end = 90
    evictions = series(
        "kueue_evicted_workloads_total",
        {**b.kueue_job, "cluster_queue": "team-a", "reason": "PodsReadyTimeout"},
    )
    preempted = series(
        "kueue_evicted_workloads_total",
        {**b.kueue_job, "cluster_queue": "team-a", "reason": "Preempted"},
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


def inference_pending(b: Builder) -> list[Case]:
    tiers = b.spec["priorities"]["tiers"]
    inference = next(t["name"] for t in tiers if t["role"] == "inference")
    training = next(t["name"] for t in tiers if t["role"] == "training")
    end = minutes(b.alerts["inferencePendingFor"]) + 5

    def pod(name: str, priority_class: str, pending: int) -> list[tuple[str, str]]:
        base = {**b.ksm_job, "namespace": "serving", "pod": name}
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


def exporters(b: Builder) -> list[Case]:
    end = minutes(b.alerts["exporterDownFor"]) + 5
    jobs = {
        "dcgm-exporter": b.dcgm_job,
        "node-exporter": b.node_job,
        "kube-state-metrics": b.ksm_job,
        "kueue": b.kueue_job,
    }
    if "overflow" in b.spec:  # the gate's Service is called overflow-gate
        jobs["overflow-gate"] = {"job": "overflow-gate", "namespace": b.spec["overflow"]["namespace"]}
    cases = []
    for exporter, job in jobs.items():
        healthy = tuple(
            (series("up", {**other, "instance": "10.0.0.1:9100"}), f"1x{end}")
            for name, other in jobs.items()
            if name != exporter
        )
        fired = {"exporter": exporter, "severity": "warning"}
        cases += b.down("ExporterDown", exporter, job, end, fired, healthy=healthy)
    return cases


def gate_flapping(b: Builder) -> list[Case]:
    limit = b.alerts["gateTransitionsPerHour"]
    gate = next(p["name"] for p in b.spec["overflow"]["providers"])
    job = {"job": "overflow-gate", "namespace": b.spec["overflow"]["namespace"]}
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


def virtual_node(b: Builder) -> list[Case]:
    end = minutes(b.alerts["virtualNodeNotReadyFor"]) + 5
    node = "vk-" + next(p["name"] for p in b.spec["overflow"]["providers"])
    return [
        *b.at_zero(
            "VirtualNodeNotReady",
            "virtual node Ready",
            lambda ready: b.node_ready(node, ready, end),
            end,
            {"node": node, "severity": "warning"},
        ),
        Case(
            "VirtualNodeNotReady",
            "a real node NotReady is not a virtual node",
            [b.node_ready("gpu-1", 0, end)],
            end,
        ),
    ]


def gate_faults(b: Builder) -> list[Case]:
    """The gate's own failure alerts (generators/components/monitoring/alerts/overflow.py)."""
    gate = next(p["name"] for p in b.spec["overflow"]["providers"])
    job = {"job": "overflow-gate", "namespace": b.spec["overflow"]["namespace"]}
    ctl = Controller(b, job, b.spec["overflow"]["gate"]["reconcileIntervalSeconds"])
    end = ctl.end

    def closed(value: int) -> tuple[str, str]:
        return (ctl.metric("trainyard_gate_closed", gate=gate), f"{value}x{end}")

    def matched(value: int) -> tuple[str, str]:
        return (ctl.metric("trainyard_gate_matched_nodes", gate=gate), f"{value}x{end}")

    last_good = "trainyard_gate_last_successful_query_timestamp_seconds"
    frozen = (ctl.metric(last_good), f"0x{end}")  # as in Controller.blind: no good query since minute 0
    return [
        *ctl.blind(
            "OverflowGateBlindWhileOpen", last_good, {"gate": gate, "severity": "critical"}, closed(0)
        ),
        Case("OverflowGateBlindWhileOpen", "closed and blind: nothing is spent", [closed(1), frozen], end),
        *ctl.failing("OverflowGateErrors", "trainyard_gate_errors_total"),
        Case(
            "OverflowGateErrors",
            "query failures are the blind alert's business",
            [(ctl.metric("trainyard_gate_errors_total", stage="query"), f"0+5x{end}")],
            end,
        ),
        *b.at_zero(
            "OverflowGateMatchesNoNode", "nodes matched", matched, end, {"gate": gate, "severity": "warning"}
        ),
        *ctl.no_leader("OverflowGateNoLeader", "trainyard_gate_leader"),
    ]


def cases(b: Builder) -> list[Case]:
    overflow = [*gate_flapping(b), *virtual_node(b), *gate_faults(b)] if "overflow" in b.spec else []
    return [
        *ib_port_state(b),
        *ib_errors(b),
        *quota_drift(b),
        *gang(b),
        *inference_pending(b),
        *exporters(b),
        *overflow,
    ]
