"""One owner's taint (and annotations) on Nodes, through the official Kubernetes client.

Both policy kinds go through `KubeNodes.apply(node, Want)`: the overflow gate wants its
taint present or absent on every selected node, the health controller wants a taint whose
value is the reason plus two annotations on some nodes and none of them on the others.

A patch always carries the node's whole taint list (Node.spec.taints has no merge key, so
any patch replaces the list) plus the resourceVersion it was computed from: if anything
else changed the node meanwhile (virtual-kubelet, the node lifecycle controller adding an
`unreachable` taint), the API server answers 409 and the list is recomputed from a fresh
read instead of overwriting the other writer's taint.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
    """What the controller needs from a Node: name, version, taints as the API sends them,
    and (for the health controller) labels and annotations."""

    name: str
    resource_version: str
    taints: tuple[TaintDict, ...]
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Want:
    """What one owner wants on a node. It owns `taint.key` with `taint.effect` (any value)
    and the annotation keys named in `annotations` (value None: absent)."""

    taint: Taint
    present: bool
    annotations: Mapping[str, str | None] = field(default_factory=dict)

    def converged(self, node: NodeTaints) -> bool:
        """True when the node already carries exactly what this asks for."""
        state = GateState.CLOSED if self.present else GateState.OPEN
        notes = all(node.annotations.get(key) == value for key, value in self.annotations.items())
        return notes and is_converged(node, self.taint, state)

    def body(self, node: NodeTaints) -> dict[str, Any]:
        """The merge patch from `node` as read: full taint list, resourceVersion, and the
        annotations (null deletes one under RFC 7386)."""
        state = GateState.CLOSED if self.present else GateState.OPEN
        meta: dict[str, Any] = {"resourceVersion": node.resource_version}
        if self.annotations:
            meta["annotations"] = dict(self.annotations)
        return {"metadata": meta, "spec": {"taints": desired_taints(node.taints, self.taint, state)}}


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


def carries_gate(taints: Sequence[TaintDict], taint: Taint) -> bool:
    """The node is closed to new pods by this gate: its key with its effect, whatever the
    value (the scheduler matches a NoSchedule taint by key and effect too, and a toleration
    for one value would not tolerate another, so any value keeps inference off)."""
    return any(owns(entry, taint) for entry in taints)


def state_of(nodes: Sequence[NodeTaints], taint: Taint) -> GateState:
    """Start-up state, failing safe: open only when at least one node matches and none
    carries the gate's key and effect. A node recreated while the gate was down carries
    the taint from creation (the rendered MutatingAdmissionPolicy adds it), a restart in
    the middle of a transition leaves some node tainted, and a wrong value still counts
    as closed: all of these start closed, and opening again must be earned."""
    if nodes and not any(carries_gate(node.taints, taint) for node in nodes):
        return GateState.OPEN
    return GateState.CLOSED


def api_error(err: BaseException) -> str:
    """One line naming what went wrong, with the API server's own message when there is one.

    str(ApiException) starts with "(403)" and puts the reason and body on later lines, so
    its first line alone says nothing; the body's `message` is what an operator needs.
    """
    if isinstance(err, client.ApiException):
        message = ""
        try:
            body = json.loads(err.body) if err.body else None
        except (ValueError, TypeError, RecursionError):
            body = None
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            message = body["message"]
        text = f"HTTP {err.status} {err.reason or ''}".rstrip()
        return f"{text}: {message}" if message else text
    return f"{type(err).__name__}: {err}".splitlines()[0]


class KubeNodes:
    """List matching nodes and converge one owner's taint and annotations on them."""

    def __init__(self, api: client.CoreV1Api, request_timeout_seconds: float = 10.0) -> None:
        self._api = api
        self._timeout = request_timeout_seconds

    def list(self, label_selector: str) -> list[NodeTaints]:
        nodes = self._api.list_node(label_selector=label_selector, _request_timeout=self._timeout)
        return sorted((self._view(node) for node in nodes.items), key=lambda node: node.name)

    def converge(self, node: NodeTaints, taint: Taint, state: GateState) -> bool:
        """Patch the node to the gate's `state`; True if a patch was made, False if none was needed.

        Raises ApiException for errors other than a vanished node or a resolved conflict.
        """
        return self.apply(node, Want(taint, present=state is GateState.CLOSED))

    def apply(self, node: NodeTaints, want: Want) -> bool:
        """Patch the node to `want`; True if a patch was made, False if none was needed.

        Raises ApiException for errors other than a vanished node or a resolved conflict.
        """
        current: NodeTaints | None = node
        for _ in range(CONFLICT_RETRIES):
            if current is None or want.converged(current):
                return False
            try:
                self._api.patch_node(
                    current.name,
                    want.body(current),
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
            labels=dict(meta.labels or {}),
            annotations=dict(meta.annotations or {}),
        )
