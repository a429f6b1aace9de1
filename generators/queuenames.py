"""Names of a team's queues: what researchers type as `kueue.x-k8s.io/queue-name`.

A team's pools with a Topology go to the ClusterQueue (and LocalQueue) `<team>`; its plain
pools to `<team>-flex` when it has both kinds, else to `<team>` (see
generators.model.types.ClusterQueue for why they cannot share a queue). Stdlib only: the
spec checks (names must not collide) and the model read it.
"""

from __future__ import annotations

FLEX_SUFFIX = "-flex"


def flex_queue(team: str) -> str:
    """The queue of a team's plain (non-topology) pools when it also has topology pools."""
    return team + FLEX_SUFFIX
