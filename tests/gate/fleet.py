"""The gate's node fleet on the session's real kube-apiserver: virtual-kubelet-like Node
objects one test owns (`Fleet`; conftest.py's `fleet` fixture gives one per test, on its
`api`), and the gate's node-patch counter. Used by test_nodes_controlplane.py and
test_faults_controlplane.py, so neither imports the other (docs/testing.md rule 4)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from trainyard_gate.overflow.hysteresis import Thresholds
from trainyard_gate.overflow.metrics import GateMetrics
from trainyard_gate.overflow.policy import Gate
from trainyard_gate.runtime.nodes import owns
from trainyard_gate.runtime.reader import Taint

TAINT = Taint("trainyard.dev/overflow-gate", "closed", "NoSchedule")
# Taints other writers own: virtual-kubelet's provider taint and a node-lifecycle one whose
# timeAdded must survive our patches byte for byte.
PROVIDER_TAINT = client.V1Taint(key="virtual-kubelet.io/provider", value="mock", effect="NoSchedule")
UNREACHABLE_TAINT = client.V1Taint(
    key="node.kubernetes.io/unreachable",
    effect="NoExecute",
    time_added=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
)


class Fleet:
    """Virtual-kubelet-like Node objects for one test, labelled so only they match."""

    def __init__(self, api: client.CoreV1Api) -> None:
        self.api = api
        self.provider = f"gate-test-{uuid.uuid4().hex[:8]}"
        self.gate = Gate(
            self.provider,
            (("trainyard.dev/provider", self.provider), ("type", "virtual-kubelet")),
            TAINT,
            Thresholds(64, 0, 16, 0),
        )
        self.names: list[str] = []

    def create(self, index: int) -> str:
        name = f"{self.provider}-{index}"
        body = client.V1Node(
            metadata=client.V1ObjectMeta(name=name, labels=dict(self.gate.match_labels)),
            spec=client.V1NodeSpec(taints=[PROVIDER_TAINT, UNREACHABLE_TAINT]),
        )
        self.api.create_node(body)
        if name not in self.names:
            self.names.append(name)
        return name

    def delete(self, name: str) -> None:
        self.api.delete_node(name, grace_period_seconds=0)

    def taints(self, name: str) -> list[dict[str, Any]]:
        spec = self.api.read_node(name).spec
        raw = self.api.api_client.sanitize_for_serialization((spec and spec.taints) or [])
        return list(raw)

    def version(self, name: str) -> str:
        meta = self.api.read_node(name).metadata
        assert meta is not None and meta.resource_version
        return meta.resource_version

    def others(self, name: str) -> list[dict[str, Any]]:
        return [entry for entry in self.taints(name) if not owns(entry, TAINT)]

    def gated(self, name: str) -> bool:
        return any(owns(entry, TAINT) and entry.get("value") == "closed" for entry in self.taints(name))

    def cleanup(self) -> None:
        for name in self.names:
            try:
                self.delete(name)
            except client.ApiException as err:
                if err.status != 404:
                    raise


def patches(metrics: GateMetrics, gate: str, action: str, dry_run: bool = False) -> float:
    labels = {"gate": gate, "action": action, "dry_run": str(dry_run).lower()}
    return metrics.registry.get_sample_value("trainyard_gate_node_patches_total", labels) or 0
