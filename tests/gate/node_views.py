"""Taint lists of one virtual node, as the API sends them, for the gate's unit tests
(runtime/test_nodes.py, overflow/test_controller.py)."""

from __future__ import annotations

from trainyard_gate.runtime.nodes import NodeTaints
from trainyard_gate.runtime.reader import Taint

GATE = Taint("trainyard.dev/overflow-gate", "closed", "NoSchedule")
PROVIDER = {"key": "virtual-kubelet.io/provider", "value": "lambda", "effect": "NoSchedule"}
UNREACHABLE = {
    "key": "node.kubernetes.io/unreachable",
    "effect": "NoExecute",
    "timeAdded": "2026-01-02T03:04:05+00:00",
}
OURS = {"key": GATE.key, "value": "closed", "effect": "NoSchedule"}


def node(*taints: dict[str, str]) -> NodeTaints:
    return NodeTaints("vk-lambda-0", "42", tuple(taints))
