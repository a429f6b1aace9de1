"""Overflow: free in-cluster GPUs against each provider's gate band, gate state and
transitions, pods on the virtual nodes, and the money it costs (GPUs in use x the
provider's price). Rendered only for environments with an `overflow` section."""

from __future__ import annotations

from generators.components.monitoring.dashboards import panels as g
from generators.components.monitoring.promql import Queries, num

SPEND_STEP = "5m"  # subquery resolution of the spend-in-range estimate
USD = "currencyUSD"  # the unit of every spend panel


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


def _by_provider(title: str, description: str, series: str, *, unit: str = g.PLAIN) -> g.Panel:
    """A Queries.per_provider series, one line per provider, stacked: the top is the total."""
    return g.graph(title, description, [g.Query(series, g.legend("provider"))], unit=unit, stacked=True)


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
        g.gauge_by(
            "Gate state (1 = closed)",
            "Closed: the provider's virtual node carries the NoSchedule taint.",
            closed,
            "gate",
            span=9,
        ),
        g.increase_by(
            "Gate transitions",
            "Opens and closes per interval (OverflowGateFlapping).",
            transitions,
            "gate",
            "direction",
            span=9,
        ),
        g.count("Gates open now", "Providers inference may spill to right now.", f"{closed} == 0"),
    ]


def virtual_nodes(q: Queries) -> list[g.Panel]:
    return [
        _by_provider(
            "Pods on virtual nodes by provider",
            "Pending or Running pods bound to each provider's virtual node.",
            q.per_provider(q.provider_pods),
        ),
        _by_provider(
            "GPUs in use by provider", "GPUs requested by those pods.", q.per_provider(q.provider_gpus)
        ),
        g.gauge_by(
            "Virtual node ready", "1 = Ready (VirtualNodeNotReady).", q.virtual_nodes_ready(), "node", span=24
        ),
    ]


def spend(q: Queries) -> list[g.Panel]:
    per_provider = q.per_provider(q.spend_usd_per_hour)
    total = f"sum({per_provider})"
    return [
        _by_provider(
            "Estimated spend rate",
            "GPUs in use x costPerGpuHourUsd, per provider (USD per hour).",
            per_provider,
            unit=USD,
        ),
        # the row's other half: three USD stats, alike but for their title, description and query
        *(
            g.single(title, description, g.Query(expr), unit=USD, span=4)
            for title, description, expr in (
                ("Spend rate now", "USD per hour, all providers.", total),
                (
                    "Estimated spend in range",
                    "Average spend rate over the range x its length (USD).",
                    f"avg_over_time(({total})[$__range:{SPEND_STEP}]) * $__range_s / 3600",
                ),
                (
                    "Worst case per hour",
                    "Every advertised provider GPU busy (USD per hour).",
                    f"vector({num(q.overflow.max_usd_per_hour)})",
                ),
            )
        ),
    ]


DASHBOARD = g.Dashboard(
    "overflow",
    "Overflow",
    "Inference spills to providers while training holds the GPUs: "
    "free GPUs against the gate bands, gate state, virtual-node pods and estimated spend.",
    rows=(("Gate", gate), ("Virtual nodes", virtual_nodes), ("Spend (estimate)", spend)),
)
