"""Which nodes belong to which pool, and how many of them can take a gang right now.

Decisions (docs/workflow.md explains them):
- Considered: nodes that advertise a pool's GPU resource, and nodes whose labels match a
  pool (a GPU node whose device plugin died still belongs to its pool: it is counted out,
  not ignored). Never considered: control-plane nodes and virtual-kubelet nodes (overflow
  providers are not inventory).
- A node belongs to a pool when it carries ALL of the pool's nodeLabels (the same rule as
  the ResourceFlavor's nodeLabels). A GPU node matching no pool, or a node matching
  several pools, is refused: the counts would be wrong either way.
- Counted: Ready, not cordoned, no NoSchedule/NoExecute taint other than the pool's own
  declared taints (a pod admitted to the pool tolerates exactly those), and at least the
  pool's GPUs per node allocatable (quota is whole nodes: a node with a GPU missing
  cannot host a full-node gang member).
- Quarantined (the health controller's NoSchedule taint trainyard.dev/gpu-health, any
  reason): counted out like any other taint, and said so with its reason, because training
  never tolerates it (docs/health.md); a pool may not declare that taint itself (spec check).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from generators.inventory.nodes import Node, taint_text
from generators.model.environment import Environment
from generators.model.health import TAINT_KEY as QUARANTINE_TAINT_KEY
from generators.model.types import Pool, Taint

IGNORED_ROLE_LABELS = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")
VIRTUAL_NODE_LABEL = ("type", "virtual-kubelet")  # set by virtual-kubelet on the nodes it creates
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass
class PoolCensus:
    pool: Pool
    matched: list[str] = field(default_factory=list)  # node names carrying the pool's labels
    counted: list[str] = field(default_factory=list)  # of those, usable for quota
    counted_out: dict[str, str] = field(default_factory=dict)  # node name -> why not


@dataclass
class Census:
    pools: dict[str, PoolCensus]
    unmatched: list[Node]  # GPU nodes that match no pool
    ambiguous: list[tuple[Node, list[str]]]  # nodes matching several pools, with the pools


def ignored(node: Node) -> bool:
    """Control-plane and virtual nodes are never pool inventory."""
    if any(label in node.labels for label in IGNORED_ROLE_LABELS):
        return True
    key, value = VIRTUAL_NODE_LABEL
    return node.labels.get(key) == value


def matches(pool: Pool, node: Node) -> bool:
    return all(node.labels.get(k) == v for k, v in pool.node_labels.items())


def _tolerated(pool: Pool, taint: Taint) -> bool:
    return any(
        t.key == taint.key and t.effect == taint.effect and (t.value is None or t.value == taint.value)
        for t in pool.taints
    )


def why_not_counted(pool: Pool, node: Node) -> str | None:
    """None when the node backs quota; else the first reason it does not."""
    if not node.ready:
        return "NotReady"
    if node.unschedulable:
        return "cordoned"
    for taint in node.taints:
        if taint.key == QUARANTINE_TAINT_KEY and taint.effect in BLOCKING_EFFECTS:
            return f"quarantined ({taint.value or 'no reason'})"
        if taint.effect in BLOCKING_EFFECTS and not _tolerated(pool, taint):
            return f"tainted {taint_text(taint)}"
    if node.amount(pool.gpu_resource) < pool.gpus_per_node:
        return f"{node.amount(pool.gpu_resource)} of {pool.gpus_per_node} {pool.gpu_resource} allocatable"
    return None


def take(env: Environment, nodes: list[Node]) -> Census:
    census = Census({p.name: PoolCensus(p) for p in env.pools}, [], [])
    gpu_resources = {p.gpu_resource for p in env.pools}
    for node in sorted(nodes, key=lambda n: n.name):
        if ignored(node):
            continue
        pools = [p for p in env.pools if matches(p, node)]
        if len(pools) > 1:
            census.ambiguous.append((node, [p.name for p in pools]))
        elif not pools:
            if any(node.has(r) for r in gpu_resources):
                census.unmatched.append(node)
        else:
            entry = census.pools[pools[0].name]
            entry.matched.append(node.name)
            reason = why_not_counted(pools[0], node)
            if reason is None:
                entry.counted.append(node.name)
            else:
                entry.counted_out[node.name] = reason
    return census
