"""One owner's taint (and annotations) on Nodes, through the official Kubernetes client.

Both policy kinds go through `NodeGateway.apply(node, Want)`: the overflow gate wants its
taint present or absent on every selected node, the health controller wants a taint whose
value is the reason plus two annotations on some nodes and none of them on the others.
`NodePatcher` is how both report it: the "node patched" line, or in dry run the "node patch
skipped (dry run)" line once per intent.

A patch always carries the node's whole taint list (Node.spec.taints has no merge key, so
any patch replaces the list) plus the resourceVersion it was computed from: if anything
else changed the node meanwhile (virtual-kubelet, the node lifecycle controller adding an
`unreachable` taint), the API server answers 409 and the list is recomputed from a fresh
read instead of overwriting the other writer's taint.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kubernetes import client, config

from . import log
from .reader import Taint

# RFC 7386: lists are replaced wholesale, which is what the full taint list needs.
MERGE_PATCH = "application/merge-patch+json"
FIELD_MANAGER = "trainyard-gate"
CONFLICT_RETRIES = 5
KUBE_REQUEST_SECONDS = 10.0  # KubeNodes' timeout per API call

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
        notes = all(node.annotations.get(key) == value for key, value in self.annotations.items())
        return notes and is_converged(node, self.taint, self.present)

    def body(self, node: NodeTaints) -> dict[str, Any]:
        """The merge patch from `node` as read: full taint list, resourceVersion, and the
        annotations (null deletes one under RFC 7386)."""
        meta: dict[str, Any] = {"resourceVersion": node.resource_version}
        if self.annotations:
            meta["annotations"] = dict(self.annotations)
        return {"metadata": meta, "spec": {"taints": desired_taints(node.taints, self.taint, self.present)}}


def owns(entry: TaintDict, taint: Taint) -> bool:
    """True for taints the owner owns: its key with its effect (the API's identity)."""
    return entry.get("key") == taint.key and entry.get("effect") == taint.effect


def has_exact(taints: Sequence[TaintDict], taint: Taint) -> bool:
    return any(owns(entry, taint) and (entry.get("value") or "") == taint.value for entry in taints)


def is_converged(node: NodeTaints, taint: Taint, present: bool) -> bool:
    """True when the node carries exactly `taint` once (present) or none of it (absent)."""
    if present:
        return has_exact(node.taints, taint) and (sum(owns(entry, taint) for entry in node.taints) == 1)
    return not any(owns(entry, taint) for entry in node.taints)


def desired_taints(taints: Sequence[TaintDict], taint: Taint, present: bool) -> list[dict[str, Any]]:
    """Other writers' taints untouched and in order; the owner's taint iff `present`."""
    kept = [dict(entry) for entry in taints if not owns(entry, taint)]
    if present:
        gate: dict[str, Any] = {"key": taint.key, "effect": taint.effect}
        if taint.value:
            gate["value"] = taint.value
        kept.append(gate)
    return kept


def carries(taints: Sequence[TaintDict], taint: Taint) -> bool:
    """The node is closed to new pods by this owner: its key with its effect, whatever the
    value (the scheduler matches a NoSchedule taint by key and effect too, and a toleration
    for one value would not tolerate another, so any value keeps the pods off)."""
    return any(owns(entry, taint) for entry in taints)


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


class NodeGateway(Protocol):
    """The nodes as both controllers see them: KubeNodes, or a test's fake."""

    def list(self, label_selector: str) -> list[NodeTaints]: ...

    def apply(self, node: NodeTaints, want: Want) -> bool: ...


class KubeNodes:
    """List matching nodes and converge one owner's taint and annotations on them."""

    def __init__(self, api: client.CoreV1Api, request_timeout_seconds: float = KUBE_REQUEST_SECONDS) -> None:
        self._api = api
        self._timeout = request_timeout_seconds

    def list(self, label_selector: str) -> list[NodeTaints]:
        nodes = self._api.list_node(label_selector=label_selector, _request_timeout=self._timeout)
        return sorted((self._view(node) for node in nodes.items), key=lambda node: node.name)

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


class NodePatcher:
    """Makes one change on one node, or in dry run reports it once, for either controller.

    A made patch logs "node patched"; in dry run nothing changes, so every pass would repeat
    the intent: "node patch skipped (dry run)" is logged once per intent and node. Each line
    carries `context` (e.g. the gate), the node and the action, then `detail`. `count` is
    called with the dry-run flag for each change made or reported. The API's failures are
    returned, not logged: each controller says in its own words what could not be done.
    """

    def __init__(self, nodes: NodeGateway, dry_run: bool) -> None:
        self.nodes, self.dry_run = nodes, dry_run
        self._reported: dict[tuple[str, str], Want] = {}  # (scope, node) -> last dry-run intent

    def apply(
        self,
        node: NodeTaints,
        want: Want,
        action: str,
        count: Callable[[bool], None],
        context: Mapping[str, Any],
        detail: Mapping[str, Any],
    ) -> Exception | None:
        """None once the change is made, not needed, or reported (dry run); else the error."""
        if self.dry_run:
            key = ("/".join(map(str, context.values())), node.name)
            if self._reported.get(key) != want:
                self._reported[key] = want
                count(True)
                log.info(
                    "node patch skipped (dry run)",
                    **context,
                    node=node.name,
                    action=action,
                    **detail,
                )
            return None
        try:
            patched = self.nodes.apply(node, want)
        except Exception as err:  # the API or the network; retried next pass
            return err
        if patched:
            count(False)
            log.info("node patched", **context, node=node.name, action=action, **detail)
        return None


def core_api(kubeconfig: Path | None) -> client.CoreV1Api:
    """The API from a kubeconfig file, else the pod's service account."""
    if kubeconfig is not None:
        # kubernetes.config is not annotated; the API classes are.
        # persist_config=False: never write refreshed credentials back into the file.
        api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig), persist_config=False
        )
        return client.CoreV1Api(api_client)
    configuration = client.Configuration()
    config.load_incluster_config(  # type: ignore[no-untyped-call]
        client_configuration=configuration
    )
    return client.CoreV1Api(client.ApiClient(configuration))
