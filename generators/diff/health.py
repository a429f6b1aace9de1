"""The health section in the words of the people who own the capacity: which backend
quarantines nodes, which pools it watches, and how many nodes of each pool it may take at
once next to that pool's reserve (a cap above the reserve lets quarantine eat quota).

Every cap is the model's (Cap.pool_cap in generators/model/health.py): nothing is
recomputed here. Condition queries, images and resources are left to the object diffs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generators.model.environment import Environment


@dataclass(frozen=True)
class PoolCap:
    """A watched pool: at most `cap` of its nodes quarantined at once; `reserve` kept out of quota."""

    cap: int
    reserve: int


def settings(env: Environment | None) -> dict[str, Any]:
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


def caps(env: Environment | None) -> dict[str, PoolCap]:
    """Watched pool -> its cap in nodes and its reserve; empty without the built-in controller."""
    controller = env.health.controller if env is not None and env.health is not None else None
    if controller is None:
        return {}
    return {p.name: PoolCap(controller.cap.pool_cap(p), p.reserve_nodes) for p in controller.pools}
