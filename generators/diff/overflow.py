"""The overflow section in the words of the people who tune it: per provider its size,
price and gate band; the gate's behaviour; migrate-back pacing; inference scaling.

label -> value, read from the model (thresholds are the per-provider staggered bands the
model derives; nothing is recomputed). Images and resource requests are left to the
object diffs: they are not what a capacity review is about.
"""

from __future__ import annotations

from typing import Any

from generators.model.environment import Environment


def settings(env: Environment | None) -> dict[str, Any]:
    """Empty when the environment has no overflow section."""
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
