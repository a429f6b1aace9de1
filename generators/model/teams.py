"""Rules about a team that both the spec checks and the model apply (stdlib only, so the
checks can run before the model exists and neither copies the other).

Queue names are what researchers type as `kueue.x-k8s.io/queue-name`: a team's pools with a
Topology go to the ClusterQueue (and LocalQueue) `<team>`, its plain pools to `<team>-flex`
when it has both kinds, else to `<team>` (generators.model.types.ClusterQueue says why they
cannot share a queue).
"""

from __future__ import annotations

from collections.abc import Iterable

FLEX_SUFFIX = "-flex"
TRAINING_ROLES = ("training", "shared")  # pool roles whose users are training jobs


def flex_queue(team: str) -> str:
    """The queue of a team's plain (non-topology) pools when it also has topology pools."""
    return team + FLEX_SUFFIX


def trains(pool_roles: Iterable[str | None]) -> bool:
    """A team trains when its queues reach a training or shared pool: its namespaces are
    training namespaces, whose pods must run at a training tier."""
    return any(role in TRAINING_ROLES for role in pool_roles)
