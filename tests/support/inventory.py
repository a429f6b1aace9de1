"""Node lists as `kubectl get nodes -o json` prints them, for `generate.py sync-inventory`:
one Node with the fields sync-inventory reads, a pool's nodes at a count, and an environment's
whole inventory with the nodes it must ignore (tests/workflow, tests/test_messages.py)."""

from __future__ import annotations

from typing import Any

from generators.model.environment import Environment
from generators.model.types import Pool


def node(
    name: str,
    labels: dict[str, str],
    *,
    gpus: int = 8,
    ready: bool = True,
    cordoned: bool = False,
    taints: list[dict[str, str]] | None = None,
    resource: str = "nvidia.com/gpu",
) -> dict[str, Any]:
    """A Node as `kubectl get nodes -o json` prints it (the fields sync-inventory reads)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {
            **({"unschedulable": True} if cordoned else {}),
            **({"taints": [dict(t) for t in taints]} if taints else {}),
        },
        "status": {
            "capacity": {"cpu": "224", "memory": "2Ti", resource: str(gpus)},
            "allocatable": {"cpu": "208", "memory": "1800Gi", resource: str(gpus)},
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True" if ready else "False"},
            ],
        },
    }


def pool_nodes(pool: Pool, count: int, prefix: str = "") -> list[dict[str, Any]]:
    taints = [{"key": t.key, "value": t.value or "", "effect": t.effect} for t in pool.taints]
    return [
        node(
            f"{prefix}{pool.name}-{i:04d}",
            dict(pool.node_labels),
            gpus=pool.gpus_per_node,
            taints=taints,
            resource=pool.gpu_resource,
        )
        for i in range(count)
    ]


def inventory(env: Environment, counts: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Every pool at its spec'd size (or `counts`), plus nodes that must be ignored."""
    items = [n for p in env.pools for n in pool_nodes(p, (counts or {}).get(p.name, p.nodes))]
    items.append(node("control-1", {"node-role.kubernetes.io/control-plane": ""}, gpus=0))
    items.append(node("vk-provider", {"type": "virtual-kubelet", "kubernetes.io/role": "agent"}, gpus=64))
    items.append(node("cpu-only-1", {"kubernetes.io/os": "linux"}, gpus=0))
    return items
