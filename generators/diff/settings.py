"""The overflow and health sections in the words of the people who tune them and who own
the capacity: label -> value per section, read from the model; nothing is recomputed here.

Overflow: per provider its size, price and gate band (the per-provider staggered bands the
model derives); the gate's behaviour; migrate-back pacing; inference scaling. Health: which
backend quarantines nodes, which pools it watches, and how many nodes of each pool it may
take at once next to that pool's reserve (a cap above the reserve lets quarantine eat
quota); every cap is the model's (Cap.pool_cap in generators/model/health.py).

Images, resource requests and condition queries are left to the object diffs: they are not
what a capacity review is about.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generators.model.environment import Environment


def overflow_settings(env: Environment | None) -> dict[str, Any]:
    """label -> value; empty when the environment has no overflow section."""
    overflow = env.overflow if env is not None else None
    if overflow is None:
        return {}
    out: dict[str, Any] = {}
    for p in overflow.providers:
        name = f"provider {p.name}"
        out[f"{name}: fill order"] = p.rank + 1
        out[f"{name}: type"] = p.type
        out[f"{name}: GPUs"] = f"{p.gpus} {p.gpu_model} ({p.gpu_resource})"
        out[f"{name}: USD per GPU-hour"] = p.cost_per_gpu_hour_usd
        out[f"{name}: max USD per hour"] = p.max_usd_per_hour
        out[f"{name}: gate opens below free GPUs"] = p.band.open_when_free_gpus_below
        out[f"{name}: gate opens after seconds"] = p.band.open_after_seconds
        out[f"{name}: gate closes at free GPUs"] = p.band.close_when_free_gpus_at_least
        out[f"{name}: gate closes after seconds"] = p.band.close_after_seconds
    gate = overflow.gate
    out["gate: free-GPU query"] = gate.free_gpus_query
    out["gate: when Prometheus is unavailable"] = gate.on_prometheus_unavailable
    out["gate: reconcile interval seconds"] = gate.reconcile_interval_seconds
    out["gate: dry run"] = gate.dry_run
    back = overflow.migrate_back
    out["migrate back: evictions per node / namespace / total"] = (
        f"{back.max_pods_to_evict_per_node} / {back.max_pods_to_evict_per_namespace} / "
        f"{back.max_pods_to_evict_total}"
    )
    out["migrate back: interval"] = back.descheduling_interval
    out["migrate back: min pod age"] = back.min_pod_age
    out["migrate back: dry run"] = back.dry_run
    for s in overflow.inference:
        out[f"inference {s.namespace}/{s.deployment}: replicas"] = f"{s.min_replicas}..{s.max_replicas}"
        out[f"inference {s.namespace}/{s.deployment}: scales on"] = (
            f"{s.metric_name} averaging {s.metric_average_value}"
        )
    return out


@dataclass(frozen=True)
class PoolCap:
    """A watched pool: at most `cap` of its nodes quarantined at once; `reserve` kept out of quota."""

    cap: int
    reserve: int


def health_settings(env: Environment | None) -> dict[str, Any]:
    """label -> value; empty without a health section (backend none)."""
    health = env.health if env is not None else None
    if health is None:
        return {}
    out: dict[str, Any] = {"health: backend": health.backend}
    c = health.controller
    if c is not None:
        out["health: watched pools"] = ", ".join(p.name for p in c.pools)
        out["health: fleet cap, nodes at once"] = c.cap.max_nodes
        out["health: cap of a pool without its own, percent of its nodes (at least 1)"] = (
            c.cap.max_percent_of_pool
        )
        out["health: dry run"] = c.dry_run
    return out


def health_caps(env: Environment | None) -> dict[str, PoolCap]:
    """Watched pool -> its cap in nodes and its reserve; empty without the built-in controller."""
    controller = env.health.controller if env is not None and env.health is not None else None
    if controller is None:
        return {}
    return {p.name: PoolCap(controller.cap.pool_cap(p), p.reserve_nodes) for p in controller.pools}
