"""The gate taint on Nodes, through the official Kubernetes client.

A patch always carries the node's whole taint list (Node.spec.taints has no merge key, so
any patch replaces the list) plus the resourceVersion it was computed from: if anything
else changed the node meanwhile (virtual-kubelet, the node lifecycle controller adding an
`unreachable` taint), the API server answers 409 and the list is recomputed from a fresh
read instead of overwriting the other writer's taint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from .hysteresis import GateState
from .policy import Taint

# RFC 7386: lists are replaced wholesale, which is what the full taint list needs.
MERGE_PATCH = "application/merge-patch+json"
FIELD_MANAGER = "trainyard-gate"
CONFLICT_RETRIES = 5

TaintDict = Mapping[str, Any]


@dataclass(frozen=True)
class NodeTaints:
    """What the gate needs from a Node: its name, version and taints as the API sends them."""

    name: str
    resource_version: str
    taints: tuple[TaintDict, ...]


def owns(entry: TaintDict, taint: Taint) -> bool:
    """True for taints the gate owns: its key with its effect (the API's identity)."""
    return entry.get("key") == taint.key and entry.get("effect") == taint.effect


def has_gate_taint(taints: Sequence[TaintDict], taint: Taint) -> bool:
    return any(owns(entry, taint) and (entry.get("value") or "") == taint.value for entry in taints)


def is_converged(node: NodeTaints, taint: Taint, state: GateState) -> bool:
    """True when the node already carries exactly what `state` asks for."""
    if state is GateState.CLOSED:
        return has_gate_taint(node.taints, taint) and (sum(owns(entry, taint) for entry in node.taints) == 1)
    return not any(owns(entry, taint) for entry in node.taints)


def desired_taints(taints: Sequence[TaintDict], taint: Taint, state: GateState) -> list[dict[str, Any]]:
    """Other writers' taints untouched and in order; the gate's taint present iff closed."""
    kept = [dict(entry) for entry in taints if not owns(entry, taint)]
    if state is GateState.CLOSED:
        gate: dict[str, Any] = {"key": taint.key, "effect": taint.effect}
        if taint.value:
            gate["value"] = taint.value
        kept.append(gate)
    return kept


def state_of(nodes: Sequence[NodeTaints], taint: Taint) -> GateState:
    """Start-up state: closed when every matching node has the taint (or there is none)."""
    if all(has_gate_taint(node.taints, taint) for node in nodes):
        return GateState.CLOSED
    return GateState.OPEN


class KubeNodes:
    """List matching nodes and converge their gate taint."""

    def __init__(self, api: client.CoreV1Api, request_timeout_seconds: float = 10.0) -> None:
        self._api = api
        self._timeout = request_timeout_seconds

    def list(self, label_selector: str) -> list[NodeTaints]:
        nodes = self._api.list_node(label_selector=label_selector, _request_timeout=self._timeout)
        return sorted((self._view(node) for node in nodes.items), key=lambda node: node.name)

    def converge(self, node: NodeTaints, taint: Taint, state: GateState) -> bool:
        """Patch the node to `state`; True if a patch was made, False if none was needed.

        Raises ApiException for errors other than a vanished node or a resolved conflict.
        """
        current: NodeTaints | None = node
        for _ in range(CONFLICT_RETRIES):
            if current is None or is_converged(current, taint, state):
                return False
            body = {
                "metadata": {"resourceVersion": current.resource_version},
                "spec": {"taints": desired_taints(current.taints, taint, state)},
            }
            try:
                self._api.patch_node(
                    current.name,
                    body,
                    field_manager=FIELD_MANAGER,
                    _content_type=MERGE_PATCH,
                    _request_timeout=self._timeout,
                )
                return True
            except client.ApiException as err:
                if err.status == 404:
                    return False  # deleted meanwhile; a recreated node is seen next pass
                if err.status != 409:
                    raise
            current = self._read(current.name)
        raise RuntimeError(f"node {node.name}: still conflicting after {CONFLICT_RETRIES} tries")

    def _read(self, name: str) -> NodeTaints | None:
        try:
            return self._view(self._api.read_node(name, _request_timeout=self._timeout))
        except client.ApiException as err:
            if err.status == 404:
                return None
            raise

    def _view(self, node: client.V1Node) -> NodeTaints:
        meta = node.metadata
        if meta is None or not meta.name or not meta.resource_version:
            raise ValueError("node without metadata.name or metadata.resourceVersion")
        serialize = self._api.api_client.sanitize_for_serialization
        taints = (node.spec.taints if node.spec else None) or []
        return NodeTaints(
            name=meta.name,
            resource_version=meta.resource_version,
            taints=tuple(serialize(entry) for entry in taints),
        )
