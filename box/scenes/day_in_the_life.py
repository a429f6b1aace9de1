"""Scene day-in-the-life: training takes the inference GPUs, inference
spills to the virtual node and comes back, every actor real.

What the scene writes is what users write: the serving team's Deployment (the pod snippet
of docs/overflow.md, `inference_pod_snippet`, so the rendered HPA and PDB select it) and a
training team's Job in its `-flex` queue, which borrows the inference pool. Everything else
is read back from the controllers that did it: the ReplicaSet's pods and their nodeName (the
scheduler), `Preempted` events (the scheduler), the Workload's admission (Kueue), the
virtual node's gate taint and the gate's own metrics (the gate, counting free GPUs from the
box's Prometheus, which scrapes kube-state-metrics), pods Running on the virtual node and
the gang held Running for its annotated time (KWOK: box/kwok-stages.yaml), the
Job's completion (the job controller), the descheduler's eviction events and its log.

Sizes come from the spec, so the story holds on any environment shaped like staging: the
gang takes all but one node of the inference pool; the inference Deployment is as many
2-GPU replicas as that last node and the virtual node hold together, so the spill fills the
virtual node exactly; the gang runs long enough for the gate to open and the spill to land.
"""

from __future__ import annotations

import re
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from box.kube import Kube, Obj, condition, is_true, wait_for
from box.scenes.context import SceneContext
from box.scenes.workloads import (
    SCENE_LABEL,
    TRAINER_IMAGE,
    gpu_container,
    training_job,
    workload_of,
)
from box.speed import seconds_of
from generators.components import priorities
from generators.components.overflow.inference import inference_pod_snippet
from generators.model.environment import Environment
from generators.model.overflow import InferenceService, Overflow, Provider
from generators.model.types import Pool

INFERENCE_GPUS = 2  # per inference pod: small enough that several share a node, as vLLM replicas do
REACT_SECONDS = 180  # any single controller reaction on 2 busy cores
POLL_SECONDS = 1.0


@dataclass(frozen=True)
class Plan:
    """What the scene creates, derived from the spec (module docstring)."""

    overflow: Overflow
    pool: Pool  # the inference pool the gang borrows
    provider: Provider  # the preferred provider: its virtual node takes the spill
    service: InferenceService
    queue: str  # the borrowing team's LocalQueue (= ClusterQueue name)
    namespace: str  # the borrowing team's namespace
    tier: str  # the training tier the gang runs at
    replicas: int
    gang: int  # pods, a whole node each
    run_seconds: int  # how long KWOK holds each gang pod Running
    # Below 1.36 the quarantine tolerations inference must write itself (none from 1.36).
    quarantine_tolerations: tuple[Obj, ...] = ()

    @property
    def spilled(self) -> int:
        """Replicas that no longer fit in the cluster once the gang runs."""
        left = (self.pool.nodes - self.gang) * self.pool.gpus_per_node
        return self.replicas - left // INFERENCE_GPUS


def plan(env: Environment) -> Plan:
    ov = env.overflow
    if ov is None or not ov.inference:
        raise ValueError(f"{env.name} has no overflow section with an inference service: nothing to spill")
    service, provider = ov.inference[0], ov.providers[0]
    queues = [q for q in env.cluster_queues if not q.topology and q.team != _owner(env, service)]
    for queue in queues:
        pool = env.pool(queue.flavors[0].pool)
        if pool.role == "inference":
            break
    else:
        raise ValueError(f"{env.name}: no training team borrows an inference pool (teams[].borrowFrom)")
    team = next(t for t in env.teams if t.name == queue.team)
    replicas = (pool.gpus_per_node + provider.gpus) // INFERENCE_GPUS
    if not service.min_replicas <= replicas <= service.max_replicas:
        raise ValueError(
            f"{env.name}: {replicas} replicas of {service.deployment} fall outside its HPA range"
        )
    free = pool.nodes * pool.gpus_per_node - replicas * INFERENCE_GPUS
    if free < provider.band.close_when_free_gpus_at_least:
        line = provider.band.close_when_free_gpus_at_least
        raise ValueError(
            f"{env.name}: {free} GPUs of {pool.name} stay free at steady state, under the "
            f"gate's close line {line}: the day cannot start with the gate closed"
        )
    gate = ov.gate
    # Long enough for the gate to see the pool full (a scrape, a pass), hold it, open, and for
    # the spill to land (6 to 12 s after the gang's arrival at --speed 10 to 60, where this
    # gives 44 to 28 s: docs/controlplane.md, "A day in the life").
    run = 20 + 4 * (provider.band.open_after_seconds + gate.reconcile_interval_seconds)
    return Plan(
        ov,
        pool,
        provider,
        service,
        queue.name,
        team.namespaces[0],
        env.default_training_tier.name,
        replicas,
        pool.nodes - 1,
        run,
        tuple(priorities.tolerations_inference_carries(env)),
    )


def _owner(env: Environment, service: InferenceService) -> str:
    return next((t.name for t in env.teams if service.namespace in t.namespaces), "")


def deployment(p: Plan) -> Obj:
    """The serving team's Deployment, its pod spec the documented snippet plus a container."""
    container = gpu_container(
        p.pool, "registry.example/chat-api:1", INFERENCE_GPUS, name="server", cpu="8", memory="64Gi"
    )
    spec = {**inference_pod_snippet(p.overflow, p.service), "containers": [container]}
    spec["tolerations"] = [*spec["tolerations"], *p.quarantine_tolerations]
    labels = dict(p.service.pod_selector)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": p.service.deployment,
            "namespace": p.service.namespace,
            "labels": {SCENE_LABEL: "day-in-the-life"},
        },
        "spec": {
            "replicas": p.replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def gang_job(p: Plan, name: str) -> Obj:
    """The gang: whole nodes of the inference pool, Running for the plan's `run_seconds`."""
    container = gpu_container(
        p.pool, TRAINER_IMAGE, p.pool.gpus_per_node, name="train", cpu="16", memory="128Gi"
    )
    return training_job(
        name,
        p.namespace,
        p.queue,
        p.tier,
        p.gang,
        {"containers": [container]},
        indexed=True,
        run_for=f"{p.run_seconds}s",
    )


@dataclass
class Snapshot:
    at: float  # seconds since the scene began
    ready: int  # Ready inference pods, wherever they run
    in_cluster: int  # Ready on the pool's nodes
    virtual: int  # Running on the virtual node
    pods: list[Obj]


@dataclass
class DayInTheLife:
    replicas: int
    steps: list[tuple[float, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    spill_seconds: float = 0.0
    back_seconds: float = 0.0
    fewest_ready: int = 0
    evictions_per_cycle: list[int] = field(default_factory=list)
    eviction_cap: int = 0
    pdb_refusals: int = 0
    # What the controllers reported, for tests: the Workload's admission (Kueue), the victims'
    # Preempted events (scheduler), the spill (scheduler, KWOK), the gate's hold, the floor.
    admission: dict[str, Any] = field(default_factory=dict)  # clusterQueue, flavor, topology
    preempted: int = 0
    spilled: int = 0
    gate_held_seconds: float = 0.0
    fewest_moving: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        found = [f"+{at:7.1f}s  {text}" for at, text in self.steps]
        cycles = ", ".join(map(str, self.evictions_per_cycle)) or "none"
        found.append(
            f"time to spill {self.spill_seconds:.1f}s; fewest ready inference replicas "
            f"{self.fewest_ready}/{self.replicas}; evictions per cycle {cycles} (cap "
            f"{self.eviction_cap}; {self.pdb_refusals} refused by the PDB); time back "
            f"{self.back_seconds:.1f}s"
        )
        found += [f"BROKEN: {problem}" for problem in self.problems]
        return found


class Watch:
    """Samples the inference pods as the scene waits, so the fewest-ready count covers every
    moment the scene looked, not only the phase ends."""

    def __init__(self, kube: Kube, p: Plan, result: DayInTheLife, say: Callable[[str], None]) -> None:
        self.kube, self.plan, self.result, self.say = kube, p, result, say
        self.began = time.monotonic()
        self.selector = ",".join(f"{k}={v}" for k, v in sorted(p.service.pod_selector.items()))
        self.counting = False  # the fewest-ready count starts once the steady state is reached
        result.fewest_ready = p.replicas

    def now(self) -> float:
        return time.monotonic() - self.began

    def step(self, text: str) -> None:
        self.result.steps.append((self.now(), text))
        self.say(f"+{self.now():.1f}s {text}")

    def sample(self) -> Snapshot:
        listed = self.kube.list("v1", "Pod", self.plan.service.namespace, label_selector=self.selector)
        pods = [p for p in listed if not p["metadata"].get("deletionTimestamp")]
        ready = [p for p in pods if is_true(p, "Ready")]
        virtual = self.plan.provider.node_name
        on_virtual = [
            p
            for p in pods
            if p["spec"].get("nodeName") == virtual and (p.get("status") or {}).get("phase") == "Running"
        ]
        in_cluster = [p for p in ready if p["spec"].get("nodeName") != virtual]
        snap = Snapshot(self.now(), len(ready), len(in_cluster), len(on_virtual), pods)
        if self.counting:
            self.result.fewest_ready = min(self.result.fewest_ready, snap.ready)
        return snap

    def until(self, check: Callable[[Snapshot], Any], timeout: float, what: str) -> Any:
        return wait_for(lambda: check(self.sample()), timeout, what, POLL_SECONDS)


def gate_metrics(context: SceneContext) -> dict[str, float]:
    """The overflow gate process's own /metrics (trainyard_gate_* samples)."""
    [process] = [p for p in context.state.processes if p.name == "overflow-gate"]
    with urllib.request.urlopen(f"http://127.0.0.1:{process.ports[0]}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("trainyard_gate_")
    }


def _gate_closed(kube: Kube, p: Plan) -> bool:
    node = kube.get("v1", "Node", p.provider.node_name) or {}
    key = p.overflow.gate.taint_key
    taints = node.get("spec", {}).get("taints") or []
    return any(t.get("key") == key and t.get("effect") == "NoSchedule" for t in taints)


def _events(kube: Kube, namespace: str, since: float) -> list[Obj]:
    found = []
    for event in kube.list("events.k8s.io/v1", "Event", namespace):
        stamp = event.get("eventTime") or event.get("deprecatedLastTimestamp") or ""
        if stamp and _epoch(stamp) >= since:
            found.append(event)
    return found


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def cycles(times: list[float], interval: float) -> list[int]:
    """Evictions grouped by descheduling cycle: one cycle's evictions come milliseconds apart,
    cycles `interval` apart."""
    groups: list[list[float]] = []
    for stamp in sorted(times):
        if groups and stamp - groups[-1][0] < interval / 2:
            groups[-1].append(stamp)
        else:
            groups.append([stamp])
    return [len(g) for g in groups]


def _pdb_refusals(context: SceneContext, after: int) -> int:
    """Evictions the descheduler's log says the API refused for a disruption budget, in the
    part of the log written since byte `after`."""
    [process] = [p for p in context.state.processes if p.name == "descheduler"]
    text = Path(process.log).read_bytes()[after:].decode(errors="replace")
    return len(
        [line for line in text.splitlines() if "Error evicting pod" in line and "disruption budget" in line]
    )


def _log_size(context: SceneContext, name: str) -> int:
    [process] = [p for p in context.state.processes if p.name == name]
    return Path(process.log).stat().st_size if Path(process.log).exists() else 0


def day_in_the_life(context: SceneContext) -> DayInTheLife:
    """Run the scene (module docstring) and remove what it created."""
    p = plan(context.env)
    kube = context.kube
    result = DayInTheLife(replicas=p.replicas)
    watch = Watch(kube, p, result, context.say)
    run = uuid.uuid4().hex[:6]
    job_name = f"day-gang-{run}"
    created: list[tuple[str, str, str, str]] = []
    try:
        _steady(context, p, watch, created)
        job, began = _training_arrives(context, p, watch, job_name, created)
        _spill(context, p, watch, job, began)
        done = _training_completes(context, p, watch, job)
        _back(context, p, watch, done)
    finally:
        for api_version, kind, name, namespace in reversed(created):
            kube.delete(api_version, kind, name, namespace)
    return result


def _metric(metrics: dict[str, float], name: str, **labels: str) -> float | None:
    """The sample `name{labels}` of a /metrics text, whatever order the labels were printed in."""
    for key, value in metrics.items():
        found = re.fullmatch(r"([^{]+)(?:\{(.*)\})?", key)
        if found and found.group(1) == name:
            have = dict(re.findall(r'(\w+)="([^"]*)"', found.group(2) or ""))
            if have == labels:
                return value
    return None


def _pool_nodes(kube: Kube, pool: Pool) -> set[str]:
    selector = ",".join(f"{k}={v}" for k, v in sorted(pool.node_labels.items()))
    return {n["metadata"]["name"] for n in kube.list("v1", "Node", label_selector=selector)}


def _steady(context: SceneContext, p: Plan, watch: Watch, created: list[tuple[str, str, str, str]]) -> None:
    kube, gate = context.kube, p.provider.band
    try:
        wait_for(
            lambda: _gate_closed(kube, p),
            REACT_SECONDS + 2 * gate.close_after_seconds,
            f"the gate's taint on {p.provider.node_name} before the day begins",
        )
    except AssertionError as err:  # say what the gate and the node showed instead
        node = kube.get("v1", "Node", p.provider.node_name) or {"metadata": {}, "spec": {}}
        matched = _metric(gate_metrics(context), "trainyard_gate_matched_nodes", gate=p.provider.name)
        raise AssertionError(
            f"{err}; the node's labels {node['metadata'].get('labels')}, taints "
            f"{node['spec'].get('taints')}; the gate matches {matched} nodes"
        ) from None
    pool_nodes = _pool_nodes(kube, p.pool)
    made = kube.create(deployment(p))
    created.append(("apps/v1", "Deployment", made["metadata"]["name"], p.service.namespace))
    watch.until(
        lambda s: s.in_cluster == p.replicas and all(x["spec"].get("nodeName") in pool_nodes for x in s.pods),
        REACT_SECONDS,
        f"{p.replicas} replicas of {p.service.deployment} Ready on {p.pool.name}",
    )
    free = p.pool.nodes * p.pool.gpus_per_node - p.replicas * INFERENCE_GPUS

    def counted() -> dict[str, float] | None:
        metrics = gate_metrics(context)
        return metrics if metrics.get("trainyard_gate_free_gpus") == free else None

    metrics = wait_for(counted, REACT_SECONDS, f"the gate counting {free} free GPUs", POLL_SECONDS)
    closed = _metric(metrics, "trainyard_gate_closed", gate=p.provider.name)
    budget = wait_for(lambda: _budget(kube, p), REACT_SECONDS, f"PDB {p.service.deployment} expecting them")
    watch.step(
        f"steady: {p.service.deployment} {p.replicas}/{p.replicas} Ready on {p.pool.name} "
        f"({INFERENCE_GPUS} GPUs each); the gate counts {free:g} free GPUs and keeps "
        f"{p.provider.node_name} closed (trainyard_gate_closed {closed:g}); PDB expects "
        f"{budget['status']['expectedPods']}, allows {budget['status']['disruptionsAllowed']} "
        "disruption"
    )
    watch.counting = True
    if closed != 1:
        result_problem(watch, f"the gate reports {p.provider.node_name} open at steady state")


def result_problem(watch: Watch, text: str) -> None:
    watch.result.problems.append(text)
    watch.step(f"BROKEN: {text}")


def _budget(kube: Kube, p: Plan) -> Obj | None:
    pdb = kube.get("policy/v1", "PodDisruptionBudget", p.service.deployment, p.service.namespace)
    status = (pdb or {}).get("status") or {}
    expected = status.get("expectedPods") == p.replicas and status.get("currentHealthy") == p.replicas
    return pdb if expected else None


def _training_arrives(
    context: SceneContext, p: Plan, watch: Watch, name: str, created: list[tuple[str, str, str, str]]
) -> tuple[Obj, float]:
    kube = context.kube
    wall = time.time()
    job = kube.create(gang_job(p, name))
    created.append(("batch/v1", "Job", name, p.namespace))
    began = watch.now()

    def admitted() -> Obj | None:
        found = workload_of(kube, job)
        return found if is_true(found, "Admitted") else None

    workload = wait_for(admitted, REACT_SECONDS, f"Kueue admitting {name}", POLL_SECONDS)
    admission = workload["status"]["admission"]
    [assignment] = admission["podSetAssignments"]
    flavor = assignment["flavors"].get(p.pool.gpu_resource)
    topology = assignment.get("topologyAssignment")
    watch.step(
        f"gang {name} ({p.gang} x {p.pool.gpus_per_node} GPUs, queue {p.queue}, {p.tier}) admitted by "
        f"Kueue in {admission['clusterQueue']} on flavor {flavor}; topology assignment: "
        + (
            f"levels {','.join(topology['levels'])}"
            if topology
            else "none (a -flex queue is not topology-aware)"
        )
    )
    watch.result.admission = {
        "clusterQueue": admission["clusterQueue"],
        "flavor": flavor,
        "topology": topology,
    }
    if flavor != p.pool.name:
        result_problem(watch, f"the gang was admitted on {flavor}, not the borrowed pool {p.pool.name}")
    pool_nodes = _pool_nodes(kube, p.pool)
    selector = f"batch.kubernetes.io/controller-uid={job['metadata']['uid']}"

    def running() -> list[Obj] | None:
        pods = kube.list("v1", "Pod", p.namespace, label_selector=selector)
        watch.sample()
        up = [
            x for x in pods if (x.get("status") or {}).get("phase") == "Running" and x["spec"].get("nodeName")
        ]
        return pods if len(up) == p.gang else None

    pods = wait_for(
        running, REACT_SECONDS, f"the scheduler placing the {p.gang} pods of {name}", POLL_SECONDS
    )
    hosts = {x["spec"]["nodeName"] for x in pods}
    preempted = [e for e in _events(kube, p.service.namespace, wall - 1) if e.get("reason") == "Preempted"]
    watch.step(
        f"the scheduler placed the gang on {len(hosts)} {p.pool.name} nodes, preempting "
        f"{len(preempted)} inference pods (events Preempted); "
        f"{'all' if hosts <= pool_nodes else 'NOT all'} on the pool"
    )
    watch.result.preempted = len(preempted)
    if not hosts <= pool_nodes:
        result_problem(watch, f"gang pods ran outside {p.pool.name}: {sorted(hosts - pool_nodes)}")
    if not preempted:
        result_problem(watch, "the gang ran without preempting any inference pod")
    return job, began


def _spill(context: SceneContext, p: Plan, watch: Watch, job: Obj, began: float) -> None:
    kube, band, gate = context.kube, p.provider.band, p.overflow.gate
    opened_before = (
        _metric(
            gate_metrics(context), "trainyard_gate_transitions_total", gate=p.provider.name, direction="open"
        )
        or 0.0
    )
    wait = REACT_SECONDS + 3 * (band.open_after_seconds + gate.reconcile_interval_seconds)
    watch.until(lambda s: not _gate_closed(kube, p), wait, f"the gate opening {p.provider.node_name}")
    metrics = gate_metrics(context)
    opened = (
        _metric(metrics, "trainyard_gate_transitions_total", gate=p.provider.name, direction="open") or 0.0
    )
    free = metrics.get("trainyard_gate_free_gpus", 0)
    watch.step(
        f"the gate opened {p.provider.node_name} (free GPUs {free:g} "
        f"< {band.open_when_free_gpus_below} for {band.open_after_seconds}s; open transitions "
        f"{opened_before:g} -> {opened:g})"
    )
    if opened <= opened_before:
        result_problem(watch, "the virtual node lost its gate taint with no open transition of the gate")
    snap = watch.until(
        lambda s: s if s.ready == p.replicas and s.virtual == p.spilled else None,
        REACT_SECONDS,
        f"{p.spilled} replicas Running on {p.provider.node_name}, all {p.replicas} Ready",
    )
    result = watch.result
    result.spill_seconds, result.spilled = snap.at - began, snap.virtual
    current = kube.get("batch/v1", "Job", job["metadata"]["name"], p.namespace)
    watch.step(
        f"spilled: {snap.virtual} replicas Running on {p.provider.node_name} (KWOK), "
        f"{snap.in_cluster} in the cluster, {snap.ready}/{p.replicas} Ready; fewest Ready so far "
        f"{result.fewest_ready}"
    )
    if is_true(current, "Complete"):
        result_problem(watch, "the gang completed before the spill landed: its run time is too short")


def _training_completes(context: SceneContext, p: Plan, watch: Watch, job: Obj) -> tuple[float, float]:
    """(wall-clock completion time the job controller wrote, scene time it was seen)."""
    kube, name = context.kube, job["metadata"]["name"]

    def complete() -> Obj | None:
        watch.sample()
        current = kube.get("batch/v1", "Job", name, p.namespace)
        return current if is_true(current, "Complete") else None

    done = wait_for(
        complete, p.run_seconds + REACT_SECONDS, f"the job controller completing {name}", POLL_SECONDS
    )
    finished = wait_for(
        lambda: condition(workload_of(kube, job), "Finished"),
        REACT_SECONDS,
        f"Kueue finishing the Workload of {name}",
    )
    watch.step(
        f"training completed ({done['status'].get('succeeded')} pods Succeeded after KWOK held them "
        f"{p.run_seconds}s); Workload Finished={finished.get('status')}"
    )
    return _epoch(done["status"]["completionTime"]), watch.now()


def _back(context: SceneContext, p: Plan, watch: Watch, done: tuple[float, float]) -> None:
    kube, band, back = context.kube, p.provider.band, p.overflow.migrate_back
    completed_at, seen_at = done
    log_from = _log_size(context, "descheduler")
    closed_before = (
        _metric(
            gate_metrics(context), "trainyard_gate_transitions_total", gate=p.provider.name, direction="close"
        )
        or 0.0
    )
    wait = REACT_SECONDS + 2 * band.close_after_seconds
    watch.until(lambda s: _gate_closed(kube, p), wait, f"the gate closing {p.provider.node_name}")
    held = time.time() - completed_at
    watch.result.gate_held_seconds = held
    closed = (
        _metric(
            gate_metrics(context), "trainyard_gate_transitions_total", gate=p.provider.name, direction="close"
        )
        or 0.0
    )
    watch.step(
        f"the gate closed {p.provider.node_name} {held:.0f}s after training freed its GPUs "
        f"(closeAfterSeconds {band.close_after_seconds}; close transitions {closed_before:g} -> "
        f"{closed:g})"
    )
    if held < band.close_after_seconds - 2:  # the job controller's completionTime has 1 s resolution
        result_problem(
            watch, f"the gate closed after {held:.0f}s, before its {band.close_after_seconds}s hysteresis"
        )
    interval, age = seconds_of(back.descheduling_interval), seconds_of(back.min_pod_age)
    # The PDB's floor while moving (a percentage is not checked: staging's is a count).
    unavailable = p.service.max_unavailable
    floor = p.replicas - unavailable if isinstance(unavailable, int) else 0
    fewest = [p.replicas]

    def home(s: Snapshot) -> Snapshot | None:
        fewest[0] = min(fewest[0], s.ready)
        return s if s.virtual == 0 and s.in_cluster == p.replicas else None

    moving = REACT_SECONDS + age + 2 * (p.spilled + 1) * interval
    snap = watch.until(home, moving, f"all {p.replicas} replicas back on {p.pool.name}")
    result = watch.result
    result.back_seconds, result.fewest_moving = snap.at - seen_at, fewest[0]
    evictions = [
        _epoch(e["eventTime"])
        for e in _events(kube, p.service.namespace, completed_at)
        if e.get("action") == "Descheduled" and e.get("type") == "Normal" and e.get("eventTime")
    ]
    result.evictions_per_cycle = cycles(evictions, interval)
    result.eviction_cap = min(
        back.max_pods_to_evict_per_node, back.max_pods_to_evict_per_namespace, back.max_pods_to_evict_total
    )
    result.pdb_refusals = _pdb_refusals(context, log_from)
    watch.step(
        f"migrated back: {len(evictions)} evictions by the descheduler in cycles of "
        f"{', '.join(map(str, result.evictions_per_cycle))} (interval {back.descheduling_interval}, "
        f"cap {result.eviction_cap}, minPodAge {back.min_pod_age}); fewest Ready while moving "
        f"{fewest[0]}/{p.replicas} (PDB floor {floor}); {result.pdb_refusals} evictions refused by "
        "the PDB"
    )
    if any(n > result.eviction_cap for n in result.evictions_per_cycle):
        result_problem(watch, f"a descheduling cycle evicted more than the cap of {result.eviction_cap}")
    if fewest[0] < floor:
        result_problem(watch, f"{fewest[0]} replicas Ready while moving back, under the PDB's {floor}")
    if len(evictions) < p.spilled:
        result_problem(
            watch, f"{len(evictions)} evictions for {p.spilled} spilled replicas: something else moved them"
        )
    if result.fewest_ready < 1:
        result_problem(watch, "inference stopped serving altogether (no replica Ready at some point)")
    if not _gate_closed(kube, p):
        result_problem(watch, f"the gate reopened {p.provider.node_name} once inference was back")
    hpa = kube.get("autoscaling/v2", "HorizontalPodAutoscaler", p.service.deployment, p.service.namespace)
    active = condition(hpa, "ScalingActive") or {}
    current = ((hpa or {}).get("status") or {}).get("currentReplicas", "?")
    scaling = f"ScalingActive={active.get('status', '?')}: {active.get('reason', 'no status yet')}"
    watch.step(
        f"steady again: {snap.in_cluster}/{p.replicas} Ready on {p.pool.name}, none on "
        f"{p.provider.node_name}, gate closed; the rendered HPA: currentReplicas {current}, {scaling}"
    )
