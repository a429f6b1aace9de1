"""Training: checkpoint throughput (the talk checkpointed every 20-30 minutes; ~1 TB in
under 30 s kept checkpoints from slowing training), tensor activity and restarts of the
training namespaces ('let it crash': recovery is a restart from the last checkpoint)."""

from __future__ import annotations

from typing import Any

from generators.components.monitoring.dashboards.panels import Board, Panel, Query, graph, single
from generators.components.monitoring.promql import Queries, match_any
from generators.model.environment import Environment

SLUG = "training"


def training_namespaces(env: Environment) -> list[str]:
    """Namespaces of teams that own a share of a training or shared pool."""
    roles = {p.name: p.role for p in env.pools}
    return sorted(
        {
            ns
            for t in env.teams
            if any(share > 0 and roles[pool] != "inference" for pool, share in t.shares.items())
            for ns in t.namespaces
        }
    )


def checkpoints(q: Queries) -> list[Panel]:
    checkpoint = q.m.checkpoint_write_query
    return [
        graph(
            "Checkpoint write throughput",
            "From monitoring.checkpointWriteQuery (filesystem-specific).",
            "Bps",
            [Query(checkpoint, "write")],
            span=16,
        ),
        single(
            "Peak checkpoint write",
            "Highest total write rate in the selected range.",
            "Bps",
            Query(f"sum({checkpoint})"),
            calc="max",
            span=8,
        ),
    ]


def jobs(q: Queries) -> list[Panel]:
    namespaces = match_any("namespace", training_namespaces(q.env))
    return [
        graph(
            "Tensor-core activity of training namespaces",
            "Rises with resolution (128 px -> 1024 px); "
            "a drop across a whole job often means a hang or a slow rank.",
            "percentunit",
            [
                Query(
                    f"avg by (namespace) ({q.dcgm('DCGM_FI_PROF_PIPE_TENSOR_ACTIVE', namespaces)})",
                    "{{namespace}}",
                )
            ],
        ),
        graph(
            "Container restarts in training namespaces",
            "Restarts per interval: each one is a job resuming from its last checkpoint.",
            "none",
            [
                Query(
                    f"sum by (namespace) (increase("
                    f"{q.ksm('kube_pod_container_status_restarts_total', namespaces)}[$__rate_interval]))",
                    "{{namespace}}",
                )
            ],
        ),
    ]


def build(env: Environment) -> dict[str, Any]:
    q = Queries(env)
    board = Board(
        q.m,
        SLUG,
        "Training",
        "Checkpoint write throughput, tensor-core activity and restarts of the training namespaces.",
    )
    board.row("Checkpoints", *checkpoints(q))
    board.row("Jobs", *jobs(q))
    return board.build()
