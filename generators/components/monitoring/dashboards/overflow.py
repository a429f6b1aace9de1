"""Overflow: free in-cluster GPUs against each provider's gate band, gate state and
transitions, pods on the virtual nodes, and the money it costs (GPUs in use x the
provider's price). Rendered only for environments with an `overflow` section."""

from __future__ import annotations

from generators.components.monitoring.dashboards import panels as g
from generators.components.monitoring.promql import Queries, num

SPEND_STEP = "5m"  # subquery resolution of the spend-in-range estimate


def _free_gpus(q: Queries) -> list[g.Query]:
    """The gate's own query and reading, and every provider's thresholds as flat lines."""
    ov = q.overflow
    lines = [
        g.Query(ov.gate.free_gpus_query, "free GPUs (gate query)"),
        g.Query(f"max({q.gate('trainyard_gate_free_gpus')})", "free GPUs (gate's last reading)"),
    ]
    for p in ov.providers:
        for gpus, meaning in (
            (p.band.close_when_free_gpus_at_least, "closes at >="),
            (p.band.open_when_free_gpus_below, "opens below"),
        ):
            lines.append(g.Query(f"vector({gpus})", f"{p.name}: {meaning} {gpus}"))
    return lines


def gate(q: Queries) -> list[g.Panel]:
    transitions = q.gate("trainyard_gate_transitions_total")
    closed = q.gate("trainyard_gate_closed")
    return [
        g.graph(
            "Free in-cluster GPUs vs gate thresholds",
            "A gate opens (taint removed) after free GPUs "
            "stay below its open line, and closes after they stay at or above its close line.",
            _free_gpus(q),
            span=24,
        ),
        g.graph(
            "Gate state (1 = closed)",
            "Closed: the provider's virtual node carries the NoSchedule taint.",
            [g.per("max", closed, "gate")],
            span=9,
        ),
        g.graph(
            "Gate transitions",
            "Opens and closes per interval (OverflowGateFlapping).",
            [g.per_interval(transitions, "gate", "direction")],
            span=9,
        ),
        g.single(
            "Gates open now",
            "Providers inference may spill to right now.",
            g.Query(f"count({closed} == 0) or vector(0)"),
            span=6,
        ),
    ]


def virtual_nodes(q: Queries) -> list[g.Panel]:
    ready = q.virtual_nodes_ready()
    return [
        g.graph(
            "Pods on virtual nodes by provider",
            "Pending or Running pods bound to each provider's virtual node.",
            [g.Query(q.per_provider(q.provider_pods), "{{provider}}")],
            stacked=True,
        ),
        g.graph(
            "GPUs in use by provider",
            "GPUs requested by those pods.",
            [g.Query(q.per_provider(q.provider_gpus), "{{provider}}")],
            stacked=True,
        ),
        g.graph(
            "Virtual node ready",
            "1 = Ready (VirtualNodeNotReady).",
            [g.per("max", ready, "node")],
            span=24,
        ),
    ]


def spend(q: Queries) -> list[g.Panel]:
    per_provider = q.per_provider(q.spend_usd_per_hour)
    total = f"sum({per_provider})"
    return [
        g.graph(
            "Estimated spend rate",
            "GPUs in use x costPerGpuHourUsd, per provider (USD per hour).",
            [g.Query(per_provider, "{{provider}}")],
            unit="currencyUSD",
            stacked=True,
            span=12,
        ),
        g.single(
            "Spend rate now", "USD per hour, all providers.", g.Query(total), unit="currencyUSD", span=4
        ),
        g.single(
            "Estimated spend in range",
            "Average spend rate over the range x its length (USD).",
            g.Query(f"avg_over_time(({total})[$__range:{SPEND_STEP}]) * $__range_s / 3600"),
            unit="currencyUSD",
            span=4,
        ),
        g.single(
            "Worst case per hour",
            "Every advertised provider GPU busy (USD per hour).",
            g.Query(f"vector({num(q.overflow.max_usd_per_hour)})"),
            unit="currencyUSD",
            span=4,
        ),
    ]


DASHBOARD = g.Dashboard(
    "overflow",
    "Overflow",
    "Inference spills to providers while training holds the GPUs: "
    "free GPUs against the gate bands, gate state, virtual-node pods and estimated spend.",
    rows=(("Gate", gate), ("Virtual nodes", virtual_nodes), ("Spend (estimate)", spend)),
)
