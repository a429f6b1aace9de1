"""Replay a trace on a running box and read back what the real controllers did.

Writes only what a user writes: one batch/v1 Job per trace job, at its arrival divided by
the speed, in the job's namespace and LocalQueue with its tier, its pods holding the
per-pod resources and the annotation the box's KWOK pod-complete Stage reads
(`trainyard.dev/box-run-for`, box/kwok-stages.yaml), so each pod runs for the
job's duration divided by the speed once it is Running. A trace failure deletes one running
pod of the job that long after Kueue admitted it (as a GPU fault would kill it); the job
controller replaces it and the replacement runs the whole duration again (no checkpoint).

Reads only what the controllers wrote: every version of every Workload (a watch, so an
eviction followed by a readmission is not lost between two reads): Kueue's Admitted
transitions, its Preempted condition (reason and the
preemptor's UID in its message, pkg/scheduler/preemption/preemption.go
`preemptionMessage`), its Finished condition; and, at the end, the nodes the scheduler
bound the pods to. Times are when the watch first saw each state Kueue wrote (History),
turned into trace seconds by multiplying by the speed. Two more watches: the replay's pods
(the node the scheduler bound each to, from when it was first seen bound until it was seen
Succeeded, Failed or deleted: the per-pool GPU-hours) and the nodes (the health
controller's quarantine taint `trainyard.dev/gpu-health`, from when it was first seen until
it was seen gone). A trace failure with an XID also sets that XID on the killed pod's node
on the box's synthetic dcgm-exporter (box/dcgm_fake.py), so the real health
controller decides whether and when to quarantine the node; the replay clears its faults
when it ends.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from box.kube import Kube, Obj
from box.scenes.bad_node import Exporter
from generators.model.environment import Environment
from generators.model.health import TAINT_KEY
from generators.model.overflow import PROVIDER_LABEL
from whatif import horizon as horizons
from whatif.report import Bound, Cut, Outcome, Preemption, Quarantine, jobs
from whatif.serving import Serving
from whatif.trace import Job, Trace

KUEUE_API = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
RUN_LABEL = "trainyard.dev/whatif-run"
JOB_LABEL = "trainyard.dev/whatif-job"
RUN_FOR = "trainyard.dev/box-run-for"  # read by the box's pod-complete Stage
POOL_LABEL = "trainyard.dev/pool"
PREEMPTOR_UID = re.compile(r"\(UID: ([0-9a-f-]+)")
SETTLE_SECONDS = 300  # wall seconds past the serial worst case before the replay gives up
POLL_SECONDS = 0.2
# A watch's server-side timeout: a watch thread sees a stop only at its next event or at the
# end of its watch, so this bounds how long the replay waits for its watches after the end
# (every replay pays it once); each timeout re-lists, a few small lists every 2 s.
WATCH_SECONDS = 2
IMAGE = "registry.example/trainer:1"  # never pulled: KWOK runs nothing


def job_object(job: Job, run: str, gpu_resource: str, speed: int) -> Obj:
    """The batch/v1 Job a user would submit for trace job `job` (see the module docstring)."""
    labels = {QUEUE_LABEL: job.queue, PRIORITY_LABEL: job.tier, RUN_LABEL: run, JOB_LABEL: job.name}
    annotations = {RUN_FOR: f"{max(1, round(job.duration * 1000 / speed))}ms"}
    if job.topology is not None:
        annotations[f"kueue.x-k8s.io/podset-{job.topology[0]}-topology"] = job.topology[1]
    requests = {gpu_resource: str(job.gpus), "cpu": job.cpu, "memory": job.memory}
    container = {
        "name": "main",
        "image": IMAGE,
        "resources": {"requests": requests, "limits": {gpu_resource: str(job.gpus)}},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"{job.name}-{run}", "namespace": job.namespace, "labels": labels},
        "spec": {
            "suspend": True,
            "parallelism": job.pods,
            "completions": job.pods,
            "completionMode": "Indexed",
            "backoffLimit": 6,
            "template": {
                "metadata": {"labels": {RUN_LABEL: run, JOB_LABEL: job.name}, "annotations": annotations},
                "spec": {
                    "restartPolicy": "Never",
                    "priorityClassName": job.tier,
                    "terminationGracePeriodSeconds": 0,
                    "containers": [container],
                },
            },
        },
    }


State = tuple[str, str, str, str, str]  # condition type, status, lastTransitionTime, reason, message


@dataclass
class History:
    """Every condition state Kueue wrote on one Workload, each with the moment the watch first
    saw it (this machine's clock, sub-second: the server's own lastTransitionTime is whole
    seconds, which at speed 10 alone would blur every time by 10 s of trace time)."""

    uid: str
    job: str  # trace job name (from the owning Job's name)
    created: float  # first seen
    states: dict[State, float] = field(default_factory=dict)

    def seen(self, workload: Obj, at: float) -> None:
        for c in (workload.get("status") or {}).get("conditions") or []:
            state = (
                c.get("type", ""),
                c.get("status", ""),
                c.get("lastTransitionTime", ""),
                c.get("reason", ""),
                c.get("message", ""),
            )
            self.states.setdefault(state, at)

    def times(self, kind: str, status: str) -> list[float]:
        """When each transition of `kind` to `status` was first seen (one per lastTransitionTime)."""
        first: dict[str, float] = {}
        for (k, s, t, _, _), at in self.states.items():
            if k == kind and s == status:
                first[t] = min(at, first.get(t, at))
        return sorted(first.values())

    @property
    def finished(self) -> float | None:
        done = self.times("Finished", "True")
        return done[0] if done else None

    def admissions(self, ended: float) -> list[tuple[float, float]]:
        """(admitted, released) per admission: released at the next Admitted=False, else at
        Finished, else when the replay ended."""
        ups, downs, done = self.times("Admitted", "True"), self.times("Admitted", "False"), self.finished
        out = []
        for up in ups:
            later = [d for d in downs if d >= up] + ([done] if done is not None and done >= up else [])
            out.append((up, min(later) if later else ended))
        return out

    def preemptions(self) -> list[tuple[float, str, str]]:
        """(time, reason, preemptor workload UID) of each Preempted=True Kueue set."""
        out = set()
        for (kind, status, _, reason, message), at in self.states.items():
            if kind == "Preempted" and status == "True":
                found = PREEMPTOR_UID.search(message)
                out.add((at, reason, found.group(1) if found else ""))
        return sorted(out)


class Watch:
    """Lists then watches one kind in a thread of its own (its own client), handing every
    version seen to `seen(obj, at, deleted)`; `listed(items, at)` after each (re-)list, so a
    deletion between two watches is not lost."""

    def __init__(
        self,
        make_client: Callable[[], Kube],
        api: str,
        kind: str,
        seen: Callable[[Obj, float, bool], None],
        listed: Callable[[list[Obj], float], None] | None = None,
        label_selector: str | None = None,
    ) -> None:
        self.make_client = make_client
        self.api, self.kind, self.label_selector = api, kind, label_selector
        self.seen, self.listed = seen, listed
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._loop, name=f"whatif-{kind.lower()}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def signal(self) -> None:
        """Ask the thread to stop (it does at its next event or its watch's timeout)."""
        self.stopping.set()

    def stop(self) -> None:
        self.signal()
        self.thread.join(timeout=30)

    def _loop(self) -> None:
        kube = self.make_client()
        try:
            resource = kube.resource(self.api, self.kind)
            while not self.stopping.is_set():
                listed = kube.dynamic.get(resource, label_selector=self.label_selector, serialize=False)
                body: dict[str, Any] = _decoded(listed)
                now = time.time()
                items = list(body.get("items") or [])
                for item in items:
                    self.seen(item, now, False)
                if self.listed is not None:
                    self.listed(items, now)
                version = body["metadata"]["resourceVersion"]
                with contextlib.suppress(Exception):  # an expired watch is re-listed above
                    for event in resource.watch(
                        resource_version=version, timeout=WATCH_SECONDS, label_selector=self.label_selector
                    ):
                        self.seen(event["raw_object"], time.time(), event["type"] == "DELETED")
                        if self.stopping.is_set():
                            break
        except BaseException as err:  # reported by replay(), which polls `error`
            self.error = err
        finally:
            kube.close()


class Recorder:
    """Watches Workloads of one run (see Watch)."""

    def __init__(self, make_client: Callable[[], Kube], run: str) -> None:
        self.run = run
        self.histories: dict[str, History] = {}
        self.lock = threading.Lock()
        self.watch = Watch(make_client, KUEUE_API, "Workload", self._seen)

    @property
    def error(self) -> BaseException | None:
        return self.watch.error

    def start(self) -> None:
        self.watch.start()

    def stop(self) -> None:
        self.watch.stop()

    def _seen(self, workload: Obj, now: float, deleted: bool) -> None:
        owners = [o for o in workload["metadata"].get("ownerReferences") or [] if o.get("kind") == "Job"]
        suffix = f"-{self.run}"
        if not owners or not owners[0]["name"].endswith(suffix):
            return  # not a Workload of this replay
        uid = workload["metadata"]["uid"]
        with self.lock:
            history = self.histories.get(uid)
            if history is None:
                history = self.histories[uid] = History(uid, owners[0]["name"][: -len(suffix)], now)
            history.seen(workload, now)

    def snapshot(self) -> dict[str, History]:
        with self.lock:
            return {
                uid: History(h.uid, h.job, h.created, dict(h.states)) for uid, h in self.histories.items()
            }


@dataclass
class PodRun:
    """One pod of the replay on the node the scheduler bound it to (wall clock)."""

    job: str
    node: str
    gpus: int
    bound: float  # first seen with spec.nodeName
    ended: float | None = None  # first seen Succeeded, Failed, terminating or deleted


class Placements:
    """Watches the replay's pods: where each was bound and for how long it held its GPUs."""

    def __init__(self, make_client: Callable[[], Kube], run: str, gpu_resource: str) -> None:
        self.gpu_resource = gpu_resource
        self.pods: dict[str, PodRun] = {}
        self.lock = threading.Lock()
        self.watch = Watch(make_client, "v1", "Pod", self._seen, self._listed, f"{RUN_LABEL}={run}")

    def _seen(self, pod: Obj, now: float, deleted: bool) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return  # not bound yet
        uid = pod["metadata"]["uid"]
        done = deleted or bool(pod["metadata"].get("deletionTimestamp"))
        done = done or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        with self.lock:
            run = self.pods.get(uid)
            if run is None:
                gpus = sum(
                    int(c.get("resources", {}).get("requests", {}).get(self.gpu_resource, 0))
                    for c in pod["spec"].get("containers") or []
                )
                run = self.pods[uid] = PodRun(pod["metadata"]["labels"][JOB_LABEL], node, gpus, now)
            if done and run.ended is None:
                run.ended = now

    def _listed(self, items: list[Obj], now: float) -> None:
        present = {i["metadata"]["uid"] for i in items}
        with self.lock:
            for uid, run in self.pods.items():
                if uid not in present and run.ended is None:
                    run.ended = now  # deleted while no watch was open

    def snapshot(self) -> list[PodRun]:
        with self.lock:
            return [PodRun(r.job, r.node, r.gpus, r.bound, r.ended) for r in self.pods.values()]


@dataclass
class Episode:
    """One quarantine of one node as watched, in wall-clock seconds (until: still open)."""

    node: str
    pool: str
    reason: str  # the taint's value, the controller's reason
    since: float
    until: float | None = None


class Quarantines:
    """Watches the nodes for the health controller's quarantine taint (TAINT_KEY)."""

    def __init__(self, make_client: Callable[[], Kube]) -> None:
        self.episodes: list[Episode] = []
        self.lock = threading.Lock()
        self.watch = Watch(make_client, "v1", "Node", self._seen, self._listed)

    def _open(self, node: str) -> Episode | None:
        return next((t for t in self.episodes if t.node == node and t.until is None), None)

    def _seen(self, node: Obj, now: float, deleted: bool) -> None:
        name = node["metadata"]["name"]
        value = None
        if not deleted:
            for taint in (node.get("spec") or {}).get("taints") or []:
                if taint.get("key") == TAINT_KEY:
                    value = str(taint.get("value", ""))
        with self.lock:
            current = self._open(name)
            if current is not None and value is None:
                current.until = now
            elif current is None and value is not None:
                pool = node["metadata"].get("labels", {}).get(POOL_LABEL, "?")
                self.episodes.append(Episode(name, pool, value, now))

    def _listed(self, items: list[Obj], now: float) -> None:
        present = {i["metadata"]["name"] for i in items}
        with self.lock:
            for taint in self.episodes:
                if taint.until is None and taint.node not in present:
                    taint.until = now

    def snapshot(self) -> list[Episode]:
        with self.lock:
            return [Episode(t.node, t.pool, t.reason, t.since, t.until) for t in self.episodes]


class Faults:
    """The XIDs this replay set on the box's synthetic dcgm-exporter (the bad-node scene's
    client of its fault API), cleared when the replay ends."""

    def __init__(self, url: str) -> None:
        self.exporter = Exporter(url)
        self.faulted: set[str] = set()

    def xid(self, node: str, code: int) -> None:
        self.exporter.fault(node, xid=code)
        self.faulted.add(node)

    def heal(self) -> None:
        for node in sorted(self.faulted):
            self.exporter.heal(node)
        self.faulted.clear()


def _decoded(response: Any) -> dict[str, Any]:
    data = response.data if hasattr(response, "data") else response
    return dict(json.loads(data))


@dataclass(frozen=True)
class Replayed:
    outcomes: tuple[Outcome, ...]
    wall_seconds: float
    complete: bool  # every job finished before the replay gave up (or reached its horizon)
    run: str  # the value of RUN_LABEL on this replay's Jobs and pods
    bound: tuple[Bound, ...] = ()  # every pod the scheduler bound, trace seconds
    quarantines: tuple[Quarantine, ...] = ()  # every quarantine taint seen, trace seconds
    span: float = 0.0  # trace seconds the replay observed
    cut: Cut | None = None  # the replay stopped at its horizon with work left (whatif/horizon.py)


@dataclass(frozen=True)
class BoxParts:
    """What of the box beyond its API server a trace may need: the synthetic dcgm-exporter's
    URL (a failure with an XID), the box's run folder (its Prometheus' scene targets, for the
    inference curve's load series) and the box's environment (sped up and scaled: the
    inference service and pool)."""

    exporter: str | None = None
    folder: Path | None = None
    env: Environment | None = None


def replay(
    kube: Kube,
    make_client: Callable[[], Kube],
    trace: Trace,
    gpu_resource: str,
    speed: int,
    say: Callable[[str], None],
    parts: BoxParts = BoxParts(),
    until: float | None = None,
) -> Replayed:
    """Submit every job at its time, drive the inference curve, wait until all finished and
    the curve ended (or the budget ran out, or the horizon came), read back.

    The horizon is `until` (trace seconds; math.inf: none), else the trace's `until:`; a job
    arriving at or after it is not submitted, and every figure is cut at it (horizon.py)."""
    trace, window = _windowed(trace, until)
    run = uuid.uuid4().hex[:6]
    watched = _Watched(
        Recorder(make_client, run), Placements(make_client, run, gpu_resource), Quarantines(make_client)
    )
    faults = Faults(parts.exporter) if parts.exporter else None
    if faults is None and any(j.failure_xid is not None for j in trace.jobs):
        raise ValueError("the trace sets an XID but the box runs no synthetic dcgm-exporter")
    serving = _serving(kube, trace, parts, run)
    for watch in watched.all:
        watch.start()
    drive = _Drive(kube, trace, run, gpu_resource, speed, window, faults, serving)
    try:
        if serving is not None:
            serving.start(run, say)  # before the clock: the adapter's relist is no part of the trace
        drive.loop(watched, say)
    finally:
        drive.ended = time.time()
        for watch in watched.all:  # all at once: each then ends within one watch timeout
            watch.signal()
        for watch in watched.all:
            watch.stop()
        if faults is not None:
            faults.heal()  # the box may replay again; the controller releases the node in its time
        if serving is not None:
            serving.stop()
    return _read_back(kube, trace, watched, drive)


@dataclass(frozen=True)
class _Window:
    """The horizon a replay stops at (trace seconds; None: none) and how many jobs of the
    trace arrive at or after it and are left out."""

    horizon: float | None
    left_out: int


def _windowed(trace: Trace, until: float | None) -> tuple[Trace, _Window]:
    """The trace without the jobs arriving at or after the horizon, and that window."""
    horizon = horizons.resolve(until, trace.until)
    if horizon is None:
        return trace, _Window(None, 0)
    if horizons.first_arrival_if_none_before((j.at for j in trace.jobs), horizon) is not None:
        raise ValueError(f"no job of the trace arrives before the horizon ({horizon:g} s)")
    kept = tuple(j for j in trace.jobs if j.at < horizon)
    return replace(trace, jobs=kept), _Window(horizon, len(trace.jobs) - len(kept))


@dataclass(frozen=True)
class _Watched:
    """The three watches a replay reads its figures from."""

    recorder: Recorder
    placements: Placements
    quarantines: Quarantines

    @property
    def all(self) -> tuple[Watch, ...]:
        return (self.recorder.watch, self.placements.watch, self.quarantines.watch)


def _serving(kube: Kube, trace: Trace, parts: BoxParts, run: str) -> Serving | None:
    """The inference curve's driver, when the trace has one."""
    if trace.inference is None:
        return None
    if parts.env is None or parts.folder is None:
        raise ValueError("the trace has an inference curve: the replay needs the box's folder and env")
    labels = {RUN_LABEL: run, JOB_LABEL: trace.inference.service}
    return Serving(kube, parts.env, trace.inference, parts.folder, labels)


@dataclass
class _Drive:
    """The replay's clock: submits each job at its time, kills the ones the trace fails,
    moves the inference curve, and stops when everything finished (complete), at the horizon
    (reaches) or when the budget ran out."""

    kube: Kube
    trace: Trace
    run: str
    gpu_resource: str
    speed: int
    window: _Window
    faults: Faults | None
    serving: Serving | None
    began: float = field(default_factory=time.time)
    ended: float = 0.0
    complete: bool = False
    reaches: bool = False  # the loop stops at the horizon, not at the budget

    def budget(self) -> float:
        """Wall seconds the loop may take: every job run back to back after the last arrival,
        or the trace's span, plus settling; the horizon's instead when it comes first."""
        jobs_budget = max(j.at for j in self.trace.jobs) + sum(j.duration for j in self.trace.jobs)
        budget = max(jobs_budget, self.trace.span) / self.speed + SETTLE_SECONDS
        horizon = self.window.horizon
        if horizon is not None and horizon / self.speed <= budget:
            self.reaches = True
            return horizon / self.speed
        return budget

    def announce(self, say: Callable[[str], None]) -> None:
        speed, horizon, left_out = self.speed, self.window.horizon, self.window.left_out
        say(
            f"replaying {len(self.trace.jobs)} jobs at speed {speed} "
            f"(trace span {self.trace.span / speed:.0f} s wall"
            + (
                f", cut at {horizon:g} s of trace: {horizon / speed:.0f} s wall"
                if horizon is not None
                else ""
            )
            + (f"; {jobs(left_out)} arriving after it left out" if left_out else "")
            + ")"
        )

    def loop(self, watched: _Watched, say: Callable[[str], None]) -> None:
        self.began = time.time()
        budget = self.budget()
        self.announce(say)
        pending = list(self.trace.jobs)
        kills = {j.name: j.failure_after for j in self.trace.jobs if j.failure_after is not None}
        curve_end = self.trace.inference.until if self.trace.inference is not None else 0.0
        horizon = self.window.horizon
        while time.time() - self.began < budget:
            failed = next((w.error for w in watched.all if w.error is not None), None)
            if failed is not None:
                raise RuntimeError(f"watching the box failed: {failed}")
            now = time.time()
            while pending and self.began + pending[0].at / self.speed <= now:
                self.kube.create(job_object(pending.pop(0), self.run, self.gpu_resource, self.speed))
            if self.serving is not None:
                self.serving.due((now - self.began) * self.speed)
            histories = watched.recorder.snapshot()
            _kill_due(self.kube, histories, kills, self.trace, self.run, self.speed, now, self.faults)
            finished = sum(1 for h in histories.values() if h.finished is not None)
            curve_over = now >= self.began + min(curve_end, horizon or curve_end) / self.speed
            if not pending and finished == len(self.trace.jobs) and curve_over:
                self.complete = True
                return
            time.sleep(POLL_SECONDS)  # the trace's own clock: the next arrival or check

    def trace_time(self, at: float) -> float:
        return (at - self.began) * self.speed


def _read_back(kube: Kube, trace: Trace, watched: _Watched, drive: _Drive) -> Replayed:
    """What the replay observed, in trace seconds, cut at the horizon if it stopped there."""
    began, ended, at = drive.began, drive.ended, drive.trace_time
    nodes = _node_labels(kube)
    bound = tuple(
        Bound(
            r.job,
            nodes.get(r.node, {}).get(POOL_LABEL, "?"),
            r.node,
            r.gpus,
            at(max(began, r.bound)),  # the curve's resting replicas were bound before the clock
            at(max(began, r.ended or ended)),
            nodes.get(r.node, {}).get(PROVIDER_LABEL, ""),
        )
        for r in sorted(watched.placements.snapshot(), key=lambda r: (r.bound, r.node))
    )
    taints = tuple(  # a node still quarantined from before the replay counts from its start
        Quarantine(t.node, t.pool, t.reason, at(max(began, t.since)), at(max(began, t.until or ended)))
        for t in sorted(watched.quarantines.snapshot(), key=lambda t: (t.since, t.node))
    )
    outcomes = _outcomes(watched.recorder.snapshot(), trace, bound, began, ended, drive.speed)
    span, cut, complete, horizon = at(ended), None, drive.complete, drive.window.horizon
    if horizon is not None and drive.reaches and not complete:  # stopped at the horizon: cut there
        outcomes, bound, taints = horizons.cut(outcomes, bound, taints, horizon)
        never, running = horizons.still(outcomes)
        span, cut = horizon, Cut(horizon, never, running, drive.window.left_out)
        complete = True  # the replay ran the window it was asked to
    return Replayed(outcomes, round(ended - began, 1), complete, drive.run, bound, taints, span, cut)


def _node_labels(kube: Kube) -> dict[str, dict[str, str]]:
    return {n["metadata"]["name"]: dict(n["metadata"].get("labels") or {}) for n in kube.list("v1", "Node")}


def _kill_due(
    kube: Kube,
    histories: dict[str, History],
    kills: dict[str, float],
    trace: Trace,
    run: str,
    speed: int,
    now: float,
    faults: Faults | None,
) -> None:
    """Delete one running pod of each job whose failure time (after its first admission) has
    come; with an XID, first set it on that pod's node (the fault that killed it)."""
    by_job = {h.job: h for h in histories.values()}
    for name, after in list(kills.items()):
        history = by_job.get(name)
        admitted = history.times("Admitted", "True") if history else []
        if not admitted or now < admitted[0] + after / speed:
            continue
        job = next(j for j in trace.jobs if j.name == name)
        pods = kube.list("v1", "Pod", job.namespace, label_selector=f"{RUN_LABEL}={run},{JOB_LABEL}={name}")
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        if running:
            if job.failure_xid is not None and faults is not None:
                faults.xid(running[0]["spec"]["nodeName"], job.failure_xid)
            kube.delete("v1", "Pod", running[0]["metadata"]["name"], job.namespace)
            del kills[name]


def _outcomes(
    histories: dict[str, History],
    trace: Trace,
    bound: tuple[Bound, ...],
    began: float,
    ended: float,
    speed: int,
) -> tuple[Outcome, ...]:
    """Trace-second outcomes per job, from the Workload histories and the pods' nodes."""
    placed: dict[str, set[str]] = {}
    for pod in bound:
        placed.setdefault(pod.job, set()).add(pod.pool)
    job_of_uid = {uid: h.job for uid, h in histories.items()}

    def trace_time(at: float) -> float:
        return (at - began) * speed

    out = []
    by_job = {h.job: h for h in histories.values()}
    for job in trace.jobs:
        history = by_job.get(job.name)
        arrived, finished = job.at, None
        ran_on: tuple[str, ...] = ()
        spans: tuple[tuple[float, float], ...] = ()
        preempted: tuple[Preemption, ...] = ()
        if history is not None:  # else no Workload: Kueue never saw the Job (counts as never admitted)
            arrived = trace_time(history.created)
            ran_on = tuple(sorted(placed.get(job.name, ())))
            spans = tuple((trace_time(a), trace_time(b)) for a, b in history.admissions(ended))
            finished = None if history.finished is None else trace_time(history.finished)
            preempted = tuple(
                Preemption(job.name, job_of_uid.get(uid, "?"), reason, trace_time(at))
                for at, reason, uid in history.preemptions()
            )
        out.append(
            Outcome(
                job.name,
                job.team,
                job.tier,
                job.total_gpus,
                arrived,
                spans,
                finished,
                trace_time(ended),
                ran_on,
                preempted,
                job.duration,
            )
        )
    return tuple(out)
