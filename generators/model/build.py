"""Validated, defaulted environment data -> Environment (the only constructor of the model).

Settings map onto the model's fields by fromspec.py's rule; this module computes only what
is derived (several values, or other sections), and hands it to from_spec.
"""

from __future__ import annotations

from typing import Any

from generators.model import quantity
from generators.model.environment import Environment
from generators.model.fromspec import from_spec, take
from generators.model.health import build_health, inference_tolerated_keys
from generators.model.monitoring import Monitoring
from generators.model.overflow import build_overflow
from generators.model.quantity import Format
from generators.model.quota import build_queues, split_by_placement
from generators.model.types import Pool, ResourceKind, Team, Tier


def per_node(raw: dict[str, Any]) -> dict[str, Any]:
    """Base units per node of every resource of the pool: GPUs, cpu, memory, extras by name."""
    per_node = {
        raw["gpu"]["resource"]: quantity.parse(raw["gpu"]["perNode"]).value,
        "cpu": quantity.parse(raw["cpu"]).value,
        "memory": quantity.parse(raw["memory"]).value,
    }
    for name, count in sorted(raw["extraResources"].items()):
        per_node[name] = quantity.parse(count).value
    return per_node


def _resources(raw_pools: list[dict[str, Any]]) -> tuple[ResourceKind, ...]:
    """coveredResources: GPU resources (pool order), cpu, memory, then extras by name.
    Every flavor of a ClusterQueue must list resources in exactly this order (a Kueue rule)."""
    gpus = list(dict.fromkeys(p["gpu"]["resource"] for p in raw_pools))
    extras = sorted({name for p in raw_pools for name in p["extraResources"]} - set(gpus))
    memory_format: Format = (
        "binary" if all(quantity.parse(p["memory"]).format == "binary" for p in raw_pools) else "decimal"
    )
    return (
        *(ResourceKind(g, "decimal") for g in gpus),
        ResourceKind("cpu", "decimal"),
        ResourceKind("memory", memory_format),
        *(ResourceKind(e, "decimal") for e in extras),
    )


def build_pools(value: dict[str, Any]) -> tuple[Pool, ...]:
    """The pools of a schema-valid environment (the cross-field checks read them too: the
    schema's pattern makes every quantity parse)."""
    return tuple(from_spec(Pool, p, {"per_node": per_node(p)}) for p in value["pools"])


def build(value: dict[str, Any], source_file: str) -> Environment:
    """The model of one environment. `value` must have passed model.load.load_environment."""
    pools = build_pools(value)
    teams: tuple[Team, ...] = take(Environment, "teams", value)
    tiers: tuple[Tier, ...] = take(Environment, "tiers", value)
    monitoring: Monitoring = take(Environment, "monitoring", value)
    resources = _resources(value["pools"])
    team_flavors = build_queues(pools, teams, resources)
    health = build_health(value["health"], pools, monitoring)
    return from_spec(
        Environment,
        value,
        {
            "display_name": value["cluster"].get("displayName", value["name"]),
            "source_file": source_file,
            "pools": pools,
            "teams": teams,
            "tiers": tiers,
            # Training may preempt, while borrowing, only what ranks as inference.
            "kueue.preemption.borrow_max_priority": max(t.value for t in tiers if t.role == "inference"),
            "resources": resources,
            "team_flavors": team_flavors,
            "cluster_queues": tuple(
                q for t in teams for q in split_by_placement(t, team_flavors[t.name], pools)
            ),
            "monitoring": monitoring,
            "overflow": build_overflow(
                value.get("overflow"), pools, monitoring, tiers, inference_tolerated_keys(health)
            ),
            "health": health,
        },
    )
