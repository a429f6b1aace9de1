"""Training: checkpoint throughput (the talk checkpointed every 20-30 minutes; ~1 TB in
under 30 s kept checkpoints from slowing training), tensor activity and restarts of the
training namespaces ('let it crash': recovery is a restart from the last checkpoint)."""

from __future__ import annotations

from generators.components.monitoring.dashboards import panels as g
from generators.components.monitoring.promql import Queries, match_any
from generators.model.environment import Environment


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


def checkpoints(q: Queries) -> list[g.Panel]:
    checkpoint = q.m.checkpoint_write_query
    return [
        g.graph(
            "Checkpoint write throughput",
            "From monitoring.checkpointWriteQuery (filesystem-specific).",
            [g.Query(checkpoint, "write")],
            unit="Bps",
            span=16,
        ),
        g.single(
            "Peak checkpoint write",
            "Highest total write rate in the selected range.",
            g.Query(f"sum({checkpoint})"),
            unit="Bps",
            calc="max",
            span=8,
        ),
    ]


def jobs(q: Queries) -> list[g.Panel]:
    namespaces = match_any("namespace", training_namespaces(q.env))
    return [
        g.graph(
            "Tensor-core activity of training namespaces",
            "Rises with resolution (128 px -> 1024 px); "
            "a drop across a whole job often means a hang or a slow rank.",
            [g.per("avg", q.dcgm("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", namespaces), "namespace")],
            unit="percentunit",
        ),
        g.increase_by(
            "Container restarts in training namespaces",
            "Restarts per interval: each one is a job resuming from its last checkpoint.",
            q.ksm("kube_pod_container_status_restarts_total", namespaces),
            "namespace",
        ),
    ]


DASHBOARD = g.Dashboard(
    "training",
    "Training",
    "Checkpoint write throughput, tensor-core activity and restarts of the training namespaces.",
    rows=(("Checkpoints", checkpoints), ("Jobs", jobs)),
)
