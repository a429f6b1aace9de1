"""Scene gang-placement: the README promises "gangs on as few racks/IB blocks as
fit, no annotation needed" for a team's topology queue. The scene occupies all but one host
of the first rack with plain 8-GPU pods (not Kueue's: Kueue counts their usage on the nodes,
pkg/cache/scheduler/tas_non_tas_pod_cache.go), submits the README's kind of gang (4 pods x
a whole node, no topology annotation) and reports the racks its pods landed on: one rack
holds all four hosts elsewhere, so anything more is scattering. It then submits the same
Job naming no class at all and reports the Workload's priority, which the README calls
optional (`training` is the default the pods get). Below Kubernetes 1.36 nothing can default
the class, so that Job must instead be refused at creation, naming the class to set
(generators/upstream/kubernetes.py): Kueue would otherwise admit it with pods that are all
refused. When the environment enables JobSet (the box runs its controller, box/jobset.py),
the Job gang is removed and the same gang is submitted as a JobSet naming no topology either,
and its racks reported the same way.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field

from kubernetes.dynamic.exceptions import ForbiddenError

from box import jobset
from box.kube import Kube, Obj, is_true, wait_for
from box.nodes import HOSTNAME
from box.scenes import workloads
from generators.components import kueue as kueue_component
from generators.components import priorities
from generators.model.environment import Environment
from generators.model.types import Pool
from generators.upstream import kubernetes

SECONDS = 120  # each controller reaction, on 2 busy cores


@dataclass
class GangPlacement:
    pool: str
    rack_level: str
    occupied_hosts: list[str]
    gang_hosts: list[str]
    gang_racks: list[str]
    fewest_racks: int  # how many racks the gang needs at best
    classless_priority: int | None  # Workload spec.priority of a Job naming no class (None: refused)
    training_priority: int  # what the README says it ranks as
    kubernetes_version: str = ""
    classless_refusal: str = ""  # below 1.36: the apiserver's message refusing that Job
    jobset_hosts: list[str] | None = None  # None: JobSet not enabled
    jobset_racks: list[str] = field(default_factory=list)
    asked_level: str | None = None  # below 1.36: the level the gangs name, as the warning asks
    notes: list[str] = field(default_factory=list)

    @property
    def annotation(self) -> str:
        if self.asked_level:
            return f"annotated {self.asked_level}, as the Kubernetes {self.kubernetes_version} warning asks"
        return "no annotation"

    @property
    def must_refuse_classless(self) -> bool:
        mechanism = kubernetes.mechanism(kubernetes.Feature.TRAINING_PRIORITY, self.kubernetes_version)
        return mechanism is kubernetes.Mechanism.REQUIRE

    @property
    def classless_ok(self) -> bool:
        if self.must_refuse_classless:
            return self.classless_priority is None and "set priorityClassName" in self.classless_refusal
        return self.classless_priority == self.training_priority

    @property
    def ok(self) -> bool:
        jobset_ok = self.jobset_hosts is None or len(self.jobset_racks) == self.fewest_racks
        return len(self.gang_racks) == self.fewest_racks and self.classless_ok and jobset_ok

    def lines(self) -> list[str]:
        return [
            f"pool {self.pool}: occupied {', '.join(self.occupied_hosts)} (plain pods, 8 GPUs each)",
            f"gang of {len(self.gang_hosts)} x 8 GPUs ({self.annotation}) landed on "
            f"{', '.join(self.gang_hosts)}",
            f"racks ({self.rack_level}): {', '.join(self.gang_racks)}; fewest that fit: {self.fewest_racks}"
            + ("  OK" if len(self.gang_racks) == self.fewest_racks else "  SCATTERED"),
            *self._jobset_lines(),
            self._classless_line(),
        ]

    def _jobset_lines(self) -> list[str]:
        if self.jobset_hosts is None:
            return []
        fit = len(self.jobset_racks) == self.fewest_racks
        return [
            f"JobSet gang of {len(self.jobset_hosts)} x 8 GPUs ({self.annotation}) landed on "
            f"{', '.join(self.jobset_hosts)}",
            f"JobSet racks ({self.rack_level}): {', '.join(self.jobset_racks)}; fewest that fit: "
            f"{self.fewest_racks}" + ("  OK" if fit else "  SCATTERED"),
        ]

    def _classless_line(self) -> str:
        if self.must_refuse_classless:
            verdict = "  OK" if self.classless_ok else "  NOT REFUSED"
            return (
                f"a Job naming no class on Kubernetes {self.kubernetes_version}: refused: "
                f"{self.classless_refusal}{verdict}"
            )
        verdict = "  OK" if self.classless_ok else "  RANKS BELOW TRAINING"
        return (
            f"a Job naming no class: Workload priority {self.classless_priority} "
            f"(training is {self.training_priority}){verdict}"
        )


def _topology_pool(env: Environment) -> tuple[Pool, str, str]:
    """The first topology pool, and a namespace and LocalQueue of a team whose queue is
    topology-aware over it."""
    for queue in env.cluster_queues:
        if queue.topology:
            team = next(t for t in env.teams if t.name == queue.team)
            return env.pool(queue.flavors[0].pool), team.namespaces[0], queue.name
    raise ValueError(f"{env.name} has no topology-aware queue: the gang-placement scene needs one")


def _job(
    name: str, namespace: str, queue: str, pool: Pool, pods: int, tier: str | None, level: str | None = None
) -> Obj:
    """A gang of `pods` whole nodes with no node selector and no topology annotation, unless
    `level` (below 1.36, what the rendered warning asks the user to add): Kueue's flavor and
    topology assignment place it (the README's kind of Job)."""
    container = workloads.gpu_container(pool, workloads.TRAINER_IMAGE, pool.gpus_per_node)
    job = workloads.training_job(
        name, namespace, queue, tier, pods, {"containers": [container]}, indexed=True
    )
    if level:
        job["spec"]["template"]["metadata"].setdefault("annotations", {})[
            kueue_component.PREFERRED_TOPOLOGY
        ] = level
    return job


def _asked_level(env: Environment, queue: str) -> str | None:
    """The level a gang must name itself: below 1.36 (Mechanism.WARN) the rendered policy only
    warns, naming the queue's level; from 1.36 the policy writes it (None)."""
    mechanism = kubernetes.mechanism(kubernetes.Feature.DEFAULT_TOPOLOGY, env.kubernetes_version)
    if mechanism is not kubernetes.Mechanism.WARN:
        return None
    return kueue_component.default_level(env, next(q for q in env.cluster_queues if q.name == queue))


def _occupant(pool: Pool, namespace: str, host: str, name: str, tier: str) -> Obj:
    """A plain pod (not Kueue's) taking a whole node `host`, at `tier`: the lowest tier, the
    only one a pod outside Kueue may name in a training namespace (named, not left to the
    policy: below 1.36 nothing defaults it)."""
    container = workloads.gpu_container(pool, "registry.example/occupant:1", pool.gpus_per_node)
    spec = {
        "priorityClassName": tier,
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
            low = priorities.lowest_tier(env).name
            pod = kube.create(_occupant(pool, namespace, host, f"occupant-{run}-{index}", low))
            created.append(("v1", "Pod", pod["metadata"]["name"]))
        wait_for(
            lambda: all(_running(kube, namespace, name) for _, _, name in created),
            SECONDS,
            "the occupant pods running",
        )
        level = _asked_level(env, queue)
        tier = env.default_training_tier.name
        job = kube.create(_job(f"gang-{run}", namespace, queue, pool, gang, tier, level))
        created.append(("batch/v1", "Job", job["metadata"]["name"]))
        hosts = _placed_hosts(kube, job, gang, f"{JOB_UID_LABEL}={job['metadata']['uid']}")
        labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
        jobset_hosts = None
        if jobset.INTEGRATION in env.kueue.integrations:
            _remove_job(kube, job)  # its rack free again, its quota back
            created.remove(("batch/v1", "Job", job["metadata"]["name"]))
            gang_set = kube.create(_jobset(f"gangset-{run}", namespace, queue, pool, gang, tier, level))
            created.append((JOBSET_API, "JobSet", gang_set["metadata"]["name"]))
            jobset_hosts = sorted(
                _placed_hosts(kube, gang_set, gang, f"{JOBSET_NAME_LABEL}={gang_set['metadata']['name']}")
            )
        priority, refusal = None, ""
        try:
            classless = kube.create(_job(f"classless-{run}", namespace, queue, pool, 1, None))
        except ForbiddenError as err:
            refusal = _message(err)
        else:
            created.append(("batch/v1", "Job", classless["metadata"]["name"]))
            workload = wait_for(
                lambda: workloads.workload_of(kube, classless), SECONDS, "the class-less Job's Workload"
            )
            priority = int(workload["spec"].get("priority", 0))
        return GangPlacement(
            pool=pool.name,
            rack_level=rack_level,
            occupied_hosts=occupied,
            gang_hosts=sorted(hosts),
            gang_racks=sorted({labels[h][rack_level] for h in hosts}),
            fewest_racks=1,
            classless_priority=priority,
            training_priority=env.default_training_tier.value,
            kubernetes_version=env.kubernetes_version,
            classless_refusal=refusal,
            jobset_hosts=jobset_hosts,
            asked_level=level,
            jobset_racks=sorted({labels[h][rack_level] for h in jobset_hosts or []}),
        )
    finally:
        for api_version, kind, name in reversed(created):
            kube.delete(api_version, kind, name, namespace)


def _running(kube: Kube, namespace: str, name: str) -> bool:
    pod = kube.get("v1", "Pod", name, namespace)
    return bool(pod and (pod.get("status") or {}).get("phase") == "Running")


def _placed_hosts(kube: Kube, gang: Obj, pods: int, selector: str) -> list[str]:
    """Until Kueue admitted the gang (a Job or a JobSet) and the scheduler bound all `pods`
    of it (its pods are those `selector` matches); their nodes."""
    wait_for(
        lambda: is_true(workloads.workload_of(kube, gang), "Admitted"),
        SECONDS,
        f"Kueue admitting {gang['metadata']['name']}",
    )

    def bound() -> list[str] | None:
        found = kube.list("v1", "Pod", gang["metadata"]["namespace"], label_selector=selector)
        names = [p["spec"].get("nodeName") for p in found]
        return [n for n in names if n] if len(found) >= pods and all(names) else None

    return wait_for(bound, SECONDS, f"the scheduler binding the pods of {gang['metadata']['name']}")


JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"  # the Job controller labels its pods
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"  # JobSet v0.12.0 api/jobset/v1alpha2


def _jobset(
    name: str, namespace: str, queue: str, pool: Pool, pods: int, tier: str, level: str | None
) -> Obj:
    """The gang as a JobSet: one replicated job of `pods` whole nodes, no topology annotation
    unless `level` (as _job; from 1.36 the rendered default topology gives it one), its pods
    at class `tier`."""
    job = _job(name, namespace, queue, pool, pods, tier, level)
    job_spec = {k: v for k, v in job["spec"].items() if k != "suspend"}
    spec = {
        "suspend": True,
        "replicatedJobs": [{"name": "workers", "replicas": 1, "template": {"spec": job_spec}}],
    }
    labels = {k: v for k, v in job["metadata"]["labels"].items() if k != workloads.SCENE_LABEL}
    return workloads.scene_object(JOBSET_API, "JobSet", name, namespace, spec, **labels)


def _remove_job(kube: Kube, job: Obj) -> None:
    """Delete the Job and wait until its pods and Workload are gone (its nodes and quota free)."""
    namespace = job["metadata"]["namespace"]
    kube.delete("batch/v1", "Job", job["metadata"]["name"], namespace)
    for pod in workloads.job_pods(kube, job):
        kube.delete("v1", "Pod", pod["metadata"]["name"], namespace)
    wait_for(
        lambda: not workloads.job_pods(kube, job) and workloads.workload_of(kube, job) is None,
        SECONDS,
        f"the pods and Workload of {job['metadata']['name']} gone",
    )


def _message(err: ForbiddenError) -> str:
    """The apiserver's message of a refusal (its Status body)."""
    try:
        return str(json.loads(err.body or "").get("message", err.body))
    except (TypeError, ValueError):
        return str(err)
