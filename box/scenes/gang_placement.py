"""Scene gang-placement (issue 21, scene 2): the README promises "gangs on as few racks/IB blocks as
fit, no annotation needed" for a team's topology queue. The scene occupies all but one host
of the first rack with plain 8-GPU pods (not Kueue's: Kueue counts their usage on the nodes,
pkg/cache/scheduler/tas_non_tas_pod_cache.go), submits the README's kind of gang (4 pods x
a whole node, no topology annotation) and reports the racks its pods landed on: one rack
holds all four hosts elsewhere, so anything more is scattering. It then submits the same
Job naming no class at all and reports the Workload's priority, which the README calls
optional (`training` is the default the pods get).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from box.kube import Kube, Obj, is_true, wait_for
from box.nodes import HOSTNAME
from box.scenes import workloads
from generators.model.environment import Environment
from generators.model.types import Pool

SECONDS = 120  # each controller reaction, on 2 busy cores


@dataclass
class GangPlacement:
    pool: str
    rack_level: str
    occupied_hosts: list[str]
    gang_hosts: list[str]
    gang_racks: list[str]
    fewest_racks: int  # how many racks the gang needs at best
    classless_priority: int  # Workload spec.priority of a Job naming no class
    training_priority: int  # what the README says it ranks as
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return len(self.gang_racks) == self.fewest_racks and self.classless_priority == self.training_priority

    def lines(self) -> list[str]:
        return [
            f"pool {self.pool}: occupied {', '.join(self.occupied_hosts)} (plain pods, 8 GPUs each)",
            f"gang of {len(self.gang_hosts)} x 8 GPUs (no annotation) landed on {', '.join(self.gang_hosts)}",
            f"racks ({self.rack_level}): {', '.join(self.gang_racks)}; fewest that fit: {self.fewest_racks}"
            + ("  OK" if len(self.gang_racks) == self.fewest_racks else "  SCATTERED"),
            f"a Job naming no class: Workload priority {self.classless_priority} "
            f"(training is {self.training_priority})"
            + ("  OK" if self.classless_priority == self.training_priority else "  RANKS BELOW TRAINING"),
        ]


def _topology_pool(env: Environment) -> tuple[Pool, str, str]:
    """The first topology pool, and a namespace and LocalQueue of a team whose queue is
    topology-aware over it."""
    for queue in env.cluster_queues:
        if queue.topology:
            team = next(t for t in env.teams if t.name == queue.team)
            return env.pool(queue.flavors[0].pool), team.namespaces[0], queue.name
    raise ValueError(f"{env.name} has no topology-aware queue: the gang-placement scene needs one")


def _job(name: str, namespace: str, queue: str, pool: Pool, pods: int, tier: str | None) -> Obj:
    """A gang of `pods` whole nodes with no topology annotation and no node selector: Kueue's
    flavor and topology assignment place it (the README's kind of Job)."""
    container = workloads.gpu_container(pool, workloads.TRAINER_IMAGE, pool.gpus_per_node)
    return workloads.training_job(
        name, namespace, queue, tier, pods, {"containers": [container]}, indexed=True
    )


def _occupant(pool: Pool, namespace: str, host: str, name: str) -> Obj:
    """A plain pod (not Kueue's) taking a whole node `host`."""
    container = workloads.gpu_container(pool, "registry.example/occupant:1", pool.gpus_per_node)
    spec = {
        "nodeSelector": {HOSTNAME: host},
        "tolerations": workloads.pool_tolerations(pool),
        "containers": [container],
    }
    return workloads.scene_object("v1", "Pod", name, namespace, spec)


def gang_placement(kube: Kube, env: Environment) -> GangPlacement:
    """Run the scene (module docstring) and clean up after it."""
    pool, namespace, queue = _topology_pool(env)
    rack_level = [level for level in pool.topology_levels if level != HOSTNAME][-1]
    nodes = sorted(
        kube.list("v1", "Node", label_selector=f"trainyard.dev/pool={pool.name}"),
        key=lambda n: n["metadata"]["name"],
    )
    racks: dict[str, list[str]] = {}
    for node in nodes:
        racks.setdefault(node["metadata"]["labels"][rack_level], []).append(node["metadata"]["name"])
    first_rack = sorted(racks.values(), key=lambda hosts: hosts[0])[0]
    occupied = first_rack[:-1]  # all but one host of the first rack
    gang = min(len(hosts) for hosts in racks.values())  # a whole rack's worth of hosts
    run = uuid.uuid4().hex[:6]
    created: list[tuple[str, str, str]] = []
    try:
        for index, host in enumerate(occupied):
            pod = kube.create(_occupant(pool, namespace, host, f"occupant-{run}-{index}"))
            created.append(("v1", "Pod", pod["metadata"]["name"]))
        wait_for(
            lambda: all(_running(kube, namespace, name) for _, _, name in created),
            SECONDS,
            "the occupant pods running",
        )
        job = kube.create(_job(f"gang-{run}", namespace, queue, pool, gang, env.default_training_tier.name))
        created.append(("batch/v1", "Job", job["metadata"]["name"]))
        hosts = _placed_hosts(kube, job, gang)
        labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
        classless = kube.create(_job(f"classless-{run}", namespace, queue, pool, 1, None))
        created.append(("batch/v1", "Job", classless["metadata"]["name"]))
        workload = wait_for(
            lambda: workloads.workload_of(kube, classless), SECONDS, "the class-less Job's Workload"
        )
        return GangPlacement(
            pool=pool.name,
            rack_level=rack_level,
            occupied_hosts=occupied,
            gang_hosts=sorted(hosts),
            gang_racks=sorted({labels[h][rack_level] for h in hosts}),
            fewest_racks=1,
            classless_priority=int(workload["spec"].get("priority", 0)),
            training_priority=env.default_training_tier.value,
        )
    finally:
        for api_version, kind, name in reversed(created):
            kube.delete(api_version, kind, name, namespace)


def _running(kube: Kube, namespace: str, name: str) -> bool:
    pod = kube.get("v1", "Pod", name, namespace)
    return bool(pod and (pod.get("status") or {}).get("phase") == "Running")


def _placed_hosts(kube: Kube, job: Obj, pods: int) -> list[str]:
    """Until Kueue admitted the gang and the scheduler bound every pod; their nodes."""
    wait_for(
        lambda: is_true(workloads.workload_of(kube, job), "Admitted"),
        SECONDS,
        f"Kueue admitting {job['metadata']['name']}",
    )
    selector = f"batch.kubernetes.io/controller-uid={job['metadata']['uid']}"

    def bound() -> list[str] | None:
        found = kube.list("v1", "Pod", job["metadata"]["namespace"], label_selector=selector)
        names = [p["spec"].get("nodeName") for p in found]
        return [n for n in names if n] if len(found) >= pods and all(names) else None

    return wait_for(bound, SECONDS, f"the scheduler binding the pods of {job['metadata']['name']}")
