"""Where Kueue really puts a job, as opposed to whether the objects are valid.

1. A ClusterQueue whose flavors mix Topology flavors with plain ones. Kueue v0.19 applies
   topology-aware scheduling implicitly only when every flavor of a queue has a topology
   (`isTASOnly`, pkg/cache/scheduler/clusterqueue.go; `isTASImplied`,
   pkg/scheduler/flavorassigner/tas_flavorassigner.go). In a mixed queue a job without
   topology annotations is refused on the topology flavors ("supports only
   TopologyAwareScheduling") and lands on (borrows) a plain one: training ran on inference
   L40S GPUs while the H100s sat idle. An annotated job is refused on the plain flavors.
2. A Topology flavor whose nodes inference pods may use (pool role other than training).
   Kueue counts pods it does not manage as used capacity on topology flavors
   (pkg/controller/tas/non_tas_usage_controller.go), so a training gang would wait for
   inference pods to leave instead of preempting them.
"""

from __future__ import annotations

from collections.abc import Iterable

from policies.context import Context, Finding

ID = "placement"
RATIONALE = (
    "valid queues can still send jobs to the wrong GPUs: a queue mixing topology and plain "
    "flavors lets training fall onto plain flavors, and topology over inference nodes never "
    "preempts inference"
)
SEVERITY = "error"
ROLE_LABEL = "trainyard.dev/pool-role"


def check(ctx: Context) -> Iterable[Finding]:
    flavors = {item.name: item for item in ctx.of_kind("ResourceFlavor")}
    topology = {name for name, item in flavors.items() if item.spec.get("topologyName")}
    for queue in ctx.of_kind("ClusterQueue"):
        names = [
            str(f.get("name"))
            for group in queue.spec.get("resourceGroups") or []
            for f in group.get("flavors") or []
        ]
        with_topology = [n for n in names if n in topology]
        plain = [n for n in names if n in flavors and n not in topology]
        if with_topology and plain:
            yield queue.finding(
                f"flavors {with_topology} have a topology and {plain} do not: Kueue applies "
                "topology-aware scheduling only when every flavor of a queue has one, so jobs "
                f"without topology annotations are refused on {with_topology[0]!r} and land on "
                f"{plain[0]!r}; split them into two ClusterQueues"
            )
    for name in sorted(topology):
        item = flavors[name]
        role = item.labels.get(ROLE_LABEL)
        if role is not None and role != "training":
            yield item.finding(
                f"topology {item.spec.get('topologyName')!r} on a pool of role {role}: Kueue counts pods it "
                "does not manage (inference) as used capacity there, so training could never preempt "
                "them; drop the topology or make the pool role training"
            )
