"""Overflow: free in-cluster GPUs against each provider's gate band, gate state and
transitions, pods on the virtual nodes, and the money it costs (GPUs in use x the
provider's price). Rendered only for environments with an `overflow` section."""

from __future__ import annotations

from typing import Any

from generators.components.monitoring.dashboards.panels import Board, Panel, Query, graph, single
from generators.components.monitoring.promql import Queries, num
from generators.model.environment import Environment

SLUG = "overflow"
SPEND_STEP = "5m"  # subquery resolution of the spend-in-range estimate


def _free_gpus(q: Queries) -> list[Query]:
    """The gate's own query and reading, and every provider's thresholds as flat lines."""
    ov = q.overflow
    lines = [
        Query(ov.gate.free_gpus_query, "free GPUs (gate query)"),
        Query(f"max({q.gate('trainyard_gate_free_gpus')})", "free GPUs (gate's last reading)"),
    ]
    for p in ov.providers:
        for gpus, meaning in (
            (p.band.close_when_free_gpus_at_least, "closes at >="),
            (p.band.open_when_free_gpus_below, "opens below"),
        ):
            lines.append(Query(f"vector({gpus})", f"{p.name}: {meaning} {gpus}"))
    return lines


def gate(q: Queries) -> list[Panel]:
    transitions = q.gate("trainyard_gate_transitions_total")
    closed = q.gate("trainyard_gate_closed")
    return [
        graph(
            "Free in-cluster GPUs vs gate thresholds",
            "A gate opens (taint removed) after free GPUs "
            "stay below its open line, and closes after they stay at or above its close line.",
            "none",
            _free_gpus(q),
            span=24,
        ),
        graph(
            "Gate state (1 = closed)",
            "Closed: the provider's virtual node carries the NoSchedule taint.",
            "none",
            [Query(f"max by (gate) ({closed})", "{{gate}}")],
            span=9,
        ),
        graph(
            "Gate transitions",
            "Opens and closes per interval (OverflowGateFlapping).",
            "none",
            [
                Query(
                    f"sum by (gate, direction) (increase({transitions}[$__rate_interval]))",
                    "{{gate}} {{direction}}",
                )
            ],
            span=9,
        ),
        single(
            "Gates open now",
            "Providers inference may spill to right now.",
            "none",
            Query(f"count({closed} == 0) or vector(0)"),
            span=6,
        ),
    ]


def virtual_nodes(q: Queries) -> list[Panel]:
    ready = q.ksm("kube_node_status_condition", 'condition="Ready"', 'status="true"', q.virtual_nodes())
    return [
        graph(
            "Pods on virtual nodes by provider",
            "Pending or Running pods bound to each provider's virtual node.",
            "none",
            [Query(q.per_provider(q.provider_pods), "{{provider}}")],
            stacked=True,
        ),
        graph(
            "GPUs in use by provider",
            "GPUs requested by those pods.",
            "none",
            [Query(q.per_provider(q.provider_gpus), "{{provider}}")],
            stacked=True,
        ),
        graph(
            "Virtual node ready",
            "1 = Ready (VirtualNodeNotReady).",
            "none",
            [Query(f"max by (node) ({ready})", "{{node}}")],
            span=24,
        ),
    ]


def spend(q: Queries) -> list[Panel]:
    per_provider = q.per_provider(q.spend_usd_per_hour)
    total = f"sum({per_provider})"
    return [
        graph(
            "Estimated spend rate",
            "GPUs in use x costPerGpuHourUsd, per provider (USD per hour).",
            "currencyUSD",
            [Query(per_provider, "{{provider}}")],
            stacked=True,
            span=12,
        ),
        single("Spend rate now", "USD per hour, all providers.", "currencyUSD", Query(total), span=4),
        single(
            "Estimated spend in range",
            "Average spend rate over the range x its length (USD).",
            "currencyUSD",
            Query(f"avg_over_time(({total})[$__range:{SPEND_STEP}]) * $__range_s / 3600"),
            span=4,
        ),
        single(
            "Worst case per hour",
            "Every advertised provider GPU busy (USD per hour).",
            "currencyUSD",
            Query(f"vector({num(q.overflow.max_usd_per_hour)})"),
            span=4,
        ),
    ]


def build(env: Environment) -> dict[str, Any]:
    q = Queries(env)
    board = Board(
        q.m,
        SLUG,
        "Overflow",
        "Inference spills to providers while training holds the GPUs: "
        "free GPUs against the gate bands, gate state, virtual-node pods and estimated spend.",
    )
    board.row("Gate", *gate(q))
    board.row("Virtual nodes", *virtual_nodes(q))
    board.row("Spend (estimate)", *spend(q))
    return board.build()
