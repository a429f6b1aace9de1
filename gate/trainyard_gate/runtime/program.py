"""What `main` hands a policy kind and what the kind hands back: one program, one CLI, one
/metrics port, Lease and /healthz, whichever kind the policy file names."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .metrics import ControllerMetrics, Liveness
from .nodes import NodeGateway
from .prometheus import PrometheusClient


@dataclass(frozen=True)
class Options:
    prometheus: PrometheusClient
    nodes: NodeGateway
    dry_run: bool  # --dry-run or spec.dryRun
    once: bool
    node_resync_seconds: float
    liveness: Liveness


@dataclass(frozen=True)
class Controller:
    metrics: ControllerMetrics
    fields: Mapping[str, Any]  # what the "starting" line names besides the policy
    work: Callable[[threading.Event], int]  # the loop until the event is set; exit code
