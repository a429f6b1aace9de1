"""One KWOK node per node of an environment: the pools' labels, taints, topology and capacity.

KWOK (sigs.k8s.io/kwok, pinned) plays the kubelet of every Node carrying its annotation: it
reports the node Ready with the allocatable we write, keeps its heartbeat and Lease, and moves
bound pods to Running (and Job pods on to Succeeded). The real kube-controller-manager then
clears the not-ready taint, and the real kube-scheduler places pods by these labels, taints
and capacities.

The spec names the topology levels of a pool but not how many hosts share a rack or racks a
block (a real cluster's nodes carry the labels; the spec need not know them). The box decides:
racks of 4 hosts (2 when the pool has fewer than 16 nodes) and 2 racks per domain of each
level above (docs/controlplane.md, "Cluster in a box").
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from generators.model.environment import Environment
from generators.model.quantity import canonical
from generators.model.types import Pool

HOSTNAME = "kubernetes.io/hostname"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"  # kwokctl's kwok-controller manages nodes with it
KWOK_VALUE = "fake"
BOX_LABEL = "trainyard.dev/box-node"  # which nodes `box up` created (so a scene can tell them)
PODS_PER_NODE = "110"  # the kubelet's default --max-pods


def domain_sizes(nodes: int, levels: int) -> list[int]:
    """Nodes per domain of each level above the host, coarsest first (see module docstring)."""
    per_rack = 4 if nodes >= 16 else 2
    return [per_rack * 2 ** (levels - 1 - k) for k in range(levels)]


def quantity(value: Fraction) -> str:
    """A base-unit amount as the apiserver prints it back (`box up` waits for the node to
    report exactly this): its canonical decimal form, so 2000Gi of bytes is 2147483648k."""
    return canonical(value, "decimal")


def capacity(pool: Pool) -> dict[str, str]:
    """What a node of `pool` reports: the spec's per-node resources and the pod limit."""
    return {**{name: quantity(value) for name, value in pool.per_node.items()}, "pods": PODS_PER_NODE}


def pool_nodes(pool: Pool) -> list[dict[str, Any]]:
    """The Node objects of `pool` (name, labels, taints, annotation; status comes later)."""
    above_host = [level for level in pool.topology_levels if level != HOSTNAME]
    sizes = domain_sizes(pool.nodes, len(above_host))
    taints = [
        {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})} for t in pool.taints
    ]
    nodes = []
    for index in range(pool.nodes):
        name = f"{pool.name}-{index:03d}"
        labels = {**pool.node_labels, HOSTNAME: name, BOX_LABEL: "true"}
        for level, size in zip(above_host, sizes, strict=True):
            labels[level] = f"{level.rsplit('/', 1)[-1]}-{index // size}"
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels, "annotations": {KWOK_ANNOTATION: KWOK_VALUE}},
                "spec": {"taints": taints},
            }
        )
    return nodes


def virtual_nodes(env: Environment) -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    """(provider, Node, capacity) for each overflow provider, as its virtual-kubelet registers
    it: its program's own labels and taint (the provider's contract: node-cli's
    type=virtual-kubelet and virtual-kubelet.io/provider, interLink's virtual-node.interlink/*),
    the provider's advertised capacity. From Kubernetes 1.36 the rendered admission policies
    add the provider label and close the gate on creation; below, box/up.py registers it with
    both, as the provider's rendered config tells its program to."""
    if env.overflow is None:
        return []
    found = []
    for provider in env.overflow.providers:
        name = provider.node_name
        config = provider.config
        capacity = {
            "cpu": str(config.get("cpu", "64")),
            "memory": str(config.get("memory", "512Gi")),
            "pods": str(config.get("pods", PODS_PER_NODE)),
            provider.gpu_resource: str(provider.gpus),
        }
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    **provider.contract.virtual_node_labels,
                    "kubernetes.io/role": "agent",  # both programs set it
                    HOSTNAME: name,
                    BOX_LABEL: "true",
                },
                "annotations": {KWOK_ANNOTATION: KWOK_VALUE},
            },
            "spec": {
                "taints": [
                    {
                        "key": provider.node_taint.key,
                        "value": provider.node_taint.value,
                        "effect": "NoSchedule",
                    }
                ]
            },
        }
        found.append((provider.name, node, capacity))
    return found


def environment_nodes(env: Environment) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """(Node, capacity) for every node of every pool, pool order then index."""
    return [(node, capacity(pool)) for pool in env.pools for node in pool_nodes(pool)]
