"""What must hold at every moment of a fault scene, checked on what the cluster reports.

A fault scene (box/scenes/fault_*.py) takes a `Snapshot` at every step, from before it
injects its fault until the loop has settled again, and hands it to `Invariants.check`,
which returns the violations of that moment (an empty list: all held). Each check reads only
what a controller wrote (ClusterQueue status by Kueue, node taints by the health controller
and the gate, the gate's own /metrics, pod status and events by the scheduler, KWOK, the
descheduler and the job and ReplicaSet controllers) against limits taken from the spec
(`limits_of`), never from the code under test:

1. quota: no ClusterQueue's admitted usage above its nominal quota plus its borrowing limit,
   and no flavor's usage over all queues above the quota that exists (nominal over every
   ClusterQueue and Cohort);
2. quarantine caps: nodes (and so GPUs) under the health taint at most the per-pool cap and
   `cap.maxNodes` overall;
3. the gate: the virtual node is open only while the gate's last reading of free GPUs was
   under its close line, only after a reading under its open line held for
   `openAfterSeconds`, and never against the gate's own recorded state for two samples in a
   row;
4. the PDB: inference Ready replicas below the PDB's `desiredHealthy` only when no eviction of
   ours (the descheduler's) happened since it last held;
5. every pod that ended has a recorded cause: it Succeeded, its Failed status carries a
   reason, or an event names why (Preempted by the scheduler, Descheduled by the descheduler,
   TaintManagerEviction by the node lifecycle controller, SuccessfulDelete by its Job's or
   ReplicaSet's controller, Stopped on its Job by Kueue), or its Job's Workload shows Kueue
   evicted it (status, not an event: events are best effort), within `cause_grace_seconds`
   (events land after the fact);
6. no job admitted twice at once, read from the Workloads (not from Kueue's Admitted events,
   which it emits at every admission it makes, a legitimate re-admission included): the
   reservations held together in one ClusterQueue within its nominal quota plus borrowing
   limit, and no Workload reserved again while a pod of its previous admission still runs.

Checks 3 to 6 keep memory across samples (`Memory`), so a scene uses one `Invariants` for
the whole run. The checks are plain functions of plain objects, so tests/box/test_invariants.py
makes each fail on a hand-built violating snapshot in milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from generators.model.quantity import QuantityError, parse

if TYPE_CHECKING:
    from box.kube import Kube
    from generators.model.environment import Environment

Obj = dict[str, Any]

QUOTA = "quota"
QUARANTINE_CAP = "quarantine-cap"
GATE = "gate"
PDB = "pdb"
POD_CAUSE = "pod-cause"
ADMISSION = "admission"
KUEUE_API = "kueue.x-k8s.io/v1beta2"

# Event reasons (on the pod) that record why it ended, and who writes them.
POD_CAUSES = {
    "Preempted": "preempted by the scheduler",
    "TaintManagerEviction": "evicted by the node lifecycle controller (its node failed)",
}
DESCHEDULED_ACTION = "Descheduled"  # the descheduler's event: action Descheduled, on the pod
OWNER_DELETE = "SuccessfulDelete"  # Job and ReplicaSet controllers: note "Deleted pod: NAME"
# Kueue stopping a Job it evicted (preempted, or its admission lost): the job controller then
# deletes every pod without an event per pod, so the Job's event is the record.
JOB_STOPPED = "Stopped"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"


@dataclass(frozen=True)
class GateLimits:
    """One provider's gate, from the spec (the sped-up copy a box renders)."""

    node: str  # the virtual node, vk-<provider>
    taint_key: str
    open_below: int
    close_at_least: int
    open_after_seconds: float
    close_after_seconds: float
    reconcile_seconds: float
    # onPrometheusUnavailable: with "hold" a blind pass resets the gate's timers
    on_unavailable: str = "hold"


@dataclass(frozen=True)
class InferenceLimits:
    namespace: str
    deployment: str  # also the PDB's name (the overflow component renders it so)
    selector: Mapping[str, str]


@dataclass(frozen=True)
class Limits:
    """Everything the checks compare with, from the spec."""

    pools: Mapping[str, Mapping[str, str]]  # pool name -> its node labels
    pool_caps: Mapping[str, int]  # pool the health controller watches -> nodes it may hold
    max_quarantined: int  # cap.maxNodes
    quarantine_keys: tuple[str, ...]
    gates: tuple[GateLimits, ...] = ()
    inference: tuple[InferenceLimits, ...] = ()
    sample_seconds: float = 1.0  # the scene's sampling period: the slack of every timing check
    cause_grace_seconds: float = 30.0


@dataclass(frozen=True)
class GateReading:
    """What the gate process reports (its /metrics), None where it does not answer."""

    free_gpus: float | None  # at its last successful query
    desired_closed: Mapping[str, float]  # provider node -> 1 closed / 0 open (its state machine)
    query_success: float | None = None  # 0: its last query failed (it is blind)


@dataclass
class Snapshot:
    """One moment of the cluster, as listed by the scene."""

    at: float  # seconds since the scene began (monotonic)
    wall: float  # Unix time of the sample (events carry wall time)
    cluster_queues: list[Obj] = field(default_factory=list)
    cohorts: list[Obj] = field(default_factory=list)
    nodes: list[Obj] = field(default_factory=list)
    gate: GateReading | None = None
    pods: list[Obj] = field(default_factory=list)  # every pod the scene watches
    pdbs: list[Obj] = field(default_factory=list)
    events: list[Obj] = field(default_factory=list)  # events.k8s.io/v1 of the watched namespaces
    workloads: list[Obj] = field(default_factory=list)  # Kueue's, of the watched namespaces


@dataclass(frozen=True)
class Violation:
    invariant: str
    at: float
    text: str

    def line(self) -> str:
        return f"+{self.at:7.1f}s  VIOLATED {self.invariant}: {self.text}"


@dataclass
class _GateMemory:
    below_open_since: float | None = None  # first sample the reading was under the open line
    at_or_above_close_since: float | None = None
    open_seen: bool = False
    mismatched_at: float | None = None


@dataclass
class _PodSeen:
    namespace: str
    name: str
    uid: str
    phase: str
    reason: str
    job: str = ""  # the Job that owns it (its job-name label), if any
    ended_at: float | None = None


@dataclass
class Memory:
    gates: dict[str, _GateMemory] = field(default_factory=dict)
    pdb_held_at: dict[str, float] = field(default_factory=dict)  # deployment -> last sample at floor
    pods: dict[str, _PodSeen] = field(default_factory=dict)  # uid -> what was seen
    reported: set[str] = field(default_factory=set)  # uids already reported without a cause
    by_scene: set[str] = field(default_factory=set)  # namespace/name of pods the scene deleted
    # namespace/name of a Workload -> each of its quota reservations seen, in order (the
    # lastTransitionTime of its QuotaReserved=True condition)
    reservations: dict[str, list[str]] = field(default_factory=dict)
    # namespace/name of a Workload -> uids of its Job's pods seen Running under its latest reservation
    running_under: dict[str, set[str]] = field(default_factory=dict)


def quantity(text: str | int | float) -> Fraction:
    try:
        return parse(text).value
    except QuantityError:
        return Fraction(0)


def _resources(groups: Iterable[Obj]) -> Iterable[tuple[str, str, Obj]]:
    """(flavor, resource, its quota entry) of a ClusterQueue's or Cohort's resourceGroups."""
    for group in groups:
        for flavor in group.get("flavors") or []:
            for resource in flavor.get("resources") or []:
                yield flavor["name"], resource["name"], resource


def _usage(queue: Obj) -> dict[tuple[str, str], Fraction]:
    """Admitted usage by (flavor, resource): Kueue's flavorsReservation (quota reserved by
    admission; flavorsUsage is the part of it already running) or flavorsUsage, the larger."""
    status = queue.get("status") or {}
    found: dict[tuple[str, str], Fraction] = {}
    for key in ("flavorsReservation", "flavorsUsage"):
        for flavor in status.get(key) or []:
            for resource in flavor.get("resources") or []:
                at = (flavor["name"], resource["name"])
                found[at] = max(found.get(at, Fraction(0)), quantity(resource.get("total", 0)))
    return found


def check_quota(snapshot: Snapshot) -> list[Violation]:
    found: list[Violation] = []
    nominal: dict[tuple[str, str], Fraction] = {}
    used: dict[tuple[str, str], Fraction] = {}
    for cohort in snapshot.cohorts:
        for flavor, resource, entry in _resources((cohort.get("spec") or {}).get("resourceGroups") or []):
            nominal[flavor, resource] = nominal.get((flavor, resource), Fraction(0)) + quantity(
                entry.get("nominalQuota", 0)
            )
    for queue in snapshot.cluster_queues:
        name = queue["metadata"]["name"]
        usage = _usage(queue)
        for flavor, resource, entry in _resources((queue.get("spec") or {}).get("resourceGroups") or []):
            own = quantity(entry.get("nominalQuota", 0))
            nominal[flavor, resource] = nominal.get((flavor, resource), Fraction(0)) + own
            total = usage.get((flavor, resource), Fraction(0))
            used[flavor, resource] = used.get((flavor, resource), Fraction(0)) + total
            limit = entry.get("borrowingLimit")
            if limit is not None and total > own + quantity(limit):
                found.append(
                    Violation(
                        QUOTA,
                        snapshot.at,
                        f"ClusterQueue {name} uses {total} {resource} of flavor {flavor}, above its "
                        f"nominal {own} plus borrowing limit {limit}",
                    )
                )
    for (flavor, resource), total in sorted(used.items()):
        if total > nominal.get((flavor, resource), Fraction(0)):
            found.append(
                Violation(
                    QUOTA,
                    snapshot.at,
                    f"ClusterQueues use {total} {resource} of flavor {flavor} together, above the "
                    f"{nominal.get((flavor, resource), 0)} that exist",
                )
            )
    return found


def _taints(node: Obj) -> list[Obj]:
    return list((node.get("spec") or {}).get("taints") or [])


def _pool_of(node: Obj, pools: Mapping[str, Mapping[str, str]]) -> str | None:
    labels = node["metadata"].get("labels") or {}
    for name, wanted in pools.items():
        if wanted and all(labels.get(k) == v for k, v in wanted.items()):
            return name
    return None


def _gpus(node: Obj) -> int:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return sum(int(quantity(v)) for k, v in allocatable.items() if k.endswith("/gpu"))


def check_quarantine_caps(limits: Limits, snapshot: Snapshot) -> list[Violation]:
    held: dict[str, list[Obj]] = {}
    for node in snapshot.nodes:
        if any(t.get("key") in limits.quarantine_keys for t in _taints(node)):
            held.setdefault(_pool_of(node, limits.pools) or "(no pool)", []).append(node)
    found = []
    for pool, nodes in sorted(held.items()):
        cap = limits.pool_caps.get(pool, 0)
        if len(nodes) > cap:
            names = ", ".join(sorted(n["metadata"]["name"] for n in nodes))
            found.append(
                Violation(
                    QUARANTINE_CAP,
                    snapshot.at,
                    f"{len(nodes)} nodes of pool {pool} quarantined ({sum(map(_gpus, nodes))} GPUs: "
                    f"{names}), above its cap of {cap}",
                )
            )
    every = [n for nodes in held.values() for n in nodes]
    if len(every) > limits.max_quarantined:
        found.append(
            Violation(
                QUARANTINE_CAP,
                snapshot.at,
                f"{len(every)} nodes quarantined ({sum(map(_gpus, every))} GPUs), above cap.maxNodes "
                f"{limits.max_quarantined}",
            )
        )
    return found


def _open(node: Obj | None, taint_key: str) -> bool | None:
    """True when the node lacks the gate taint (NoSchedule), None when there is no node."""
    if node is None:
        return None
    return not any(t.get("key") == taint_key and t.get("effect") == "NoSchedule" for t in _taints(node))


def check_gate(limits: Limits, memory: Memory, snapshot: Snapshot) -> list[Violation]:
    found: list[Violation] = []
    nodes = {n["metadata"]["name"]: n for n in snapshot.nodes}
    reading = snapshot.gate
    slack = limits.sample_seconds
    for gate in limits.gates:
        mem = memory.gates.setdefault(gate.node, _GateMemory())
        free = reading.free_gpus if reading else None
        if reading is not None and reading.query_success == 0 and gate.on_unavailable == "hold":
            # blind under `hold`: its timers restart (overflow/hysteresis.py), so do these
            mem.at_or_above_close_since = None
            if not mem.open_seen:
                mem.below_open_since = None
        elif free is not None and free == free:  # NaN: no successful query yet
            if free < gate.open_below:
                mem.below_open_since = (
                    mem.below_open_since if mem.below_open_since is not None else snapshot.at
                )
            elif not mem.open_seen:
                mem.below_open_since = None
            if free >= gate.close_at_least:
                if mem.at_or_above_close_since is None:
                    mem.at_or_above_close_since = snapshot.at
            else:
                mem.at_or_above_close_since = None
        is_open = _open(nodes.get(gate.node), gate.taint_key)
        if not is_open:
            mem.open_seen = False
            mem.mismatched_at = None
            continue
        if not mem.open_seen:  # seen opening now: a reading under the open line must have held
            held = snapshot.at - mem.below_open_since if mem.below_open_since is not None else None
            if held is None or held < gate.open_after_seconds - slack:
                seen = "no reading under it" if held is None else f"a reading under it for {held:.1f}s"
                found.append(
                    Violation(
                        GATE,
                        snapshot.at,
                        f"{gate.node} open with {seen}; the gate opens only after free GPUs stay under "
                        f"{gate.open_below} for {gate.open_after_seconds:g}s (last reading {free})",
                    )
                )
        mem.open_seen = True
        if mem.at_or_above_close_since is not None:
            late = snapshot.at - mem.at_or_above_close_since
            allowed = gate.close_after_seconds + gate.reconcile_seconds + 2 * slack
            if late > allowed:
                found.append(
                    Violation(
                        GATE,
                        snapshot.at,
                        f"{gate.node} still open {late:.1f}s after the gate read {free} free GPUs, at or "
                        f"above its close line {gate.close_at_least} (closeAfterSeconds "
                        f"{gate.close_after_seconds:g})",
                    )
                )
        wanted = reading.desired_closed.get(gate.node) if reading else None
        if wanted == 1:
            if mem.mismatched_at is not None:
                found.append(
                    Violation(
                        GATE,
                        snapshot.at,
                        f"{gate.node} open while the gate's recorded state is closed, since "
                        f"+{mem.mismatched_at:.1f}s",
                    )
                )
            else:
                mem.mismatched_at = snapshot.at  # one sample may fall between its decision and patch
        else:
            mem.mismatched_at = None
    return found


def _selects(pod: Obj, selector: Mapping[str, str]) -> bool:
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def _is_ready(pod: Obj) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _event_time(event: Obj) -> float | None:
    stamp = event.get("eventTime") or event.get("deprecatedLastTimestamp") or event.get("lastTimestamp")
    return _epoch(stamp) if stamp else None


def _regarding(event: Obj) -> Obj:
    return event.get("regarding") or event.get("involvedObject") or {}


def check_pdb(limits: Limits, memory: Memory, snapshot: Snapshot) -> list[Violation]:
    found = []
    budgets = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in snapshot.pdbs}
    for service in limits.inference:
        pdb = budgets.get((service.namespace, service.deployment))
        status = (pdb or {}).get("status") or {}
        if "desiredHealthy" not in status:
            continue
        floor = int(status["desiredHealthy"])
        pods = [p for p in snapshot.pods if p["metadata"].get("namespace") == service.namespace]
        ready = sum(1 for p in pods if _selects(p, service.selector) and _is_ready(p))
        key = f"{service.namespace}/{service.deployment}"
        if ready >= floor:
            memory.pdb_held_at[key] = snapshot.wall
            continue
        since = memory.pdb_held_at.get(key)
        ours = [
            e
            for e in snapshot.events
            if e.get("action") == DESCHEDULED_ACTION
            and _regarding(e).get("namespace") == service.namespace
            and since is not None
            and (_event_time(e) or 0) >= since - 1  # event times have one-second resolution
        ]
        if ours:
            names = ", ".join(sorted({_regarding(e).get("name", "?") for e in ours}))
            found.append(
                Violation(
                    PDB,
                    snapshot.at,
                    f"{ready} Ready replicas of {key}, under the PDB's {floor}, after our evictions "
                    f"({names})",
                )
            )
    return found


def _evictions(workload: Obj) -> str:
    """Why Kueue evicted `workload`, from its status (durable, unlike events): its Evicted
    condition, else its eviction counts; empty if it never was."""
    status = workload.get("status") or {}
    for entry in status.get("conditions") or []:
        if entry.get("type") == "Evicted" and entry.get("status") == "True":
            return f"{entry.get('reason', '')}: {entry.get('message', '')}"
    counted = (status.get("schedulingStats") or {}).get("evictions") or []
    return ", ".join(f"{e.get('reason', '')} x{e.get('count', 1)}" for e in counted)


def _causes(events: Iterable[Obj], workloads: Iterable[Obj] = ()) -> dict[str, str]:
    """Pod uid, namespace/name or job:namespace/job -> the recorded cause of its end."""
    found: dict[str, str] = {}
    for workload in workloads:
        why = _evictions(workload)
        for owner in workload["metadata"].get("ownerReferences") or []:
            if why and owner.get("kind") == "Job":
                found.setdefault(
                    f"job:{workload['metadata'].get('namespace', '')}/{owner.get('name', '')}",
                    f"its Job's Workload evicted by Kueue ({why})",
                )
    for event in events:
        about = _regarding(event)
        namespace = about.get("namespace", "")
        cause = None
        if event.get("reason") in POD_CAUSES and about.get("kind") == "Pod":
            cause = POD_CAUSES[event["reason"]]
        elif event.get("action") == DESCHEDULED_ACTION and about.get("kind") == "Pod":
            cause = "evicted by the descheduler"
        elif event.get("reason") == JOB_STOPPED and about.get("kind") == "Job":
            note = event.get("note") or event.get("message") or ""
            found.setdefault(f"job:{namespace}/{about.get('name', '')}", f"its Job stopped by Kueue: {note}")
            continue
        elif event.get("reason") == OWNER_DELETE:
            note = event.get("note") or event.get("message") or ""
            if note.startswith("Deleted pod: "):
                name = note.removeprefix("Deleted pod: ").strip()
                found.setdefault(f"{namespace}/{name}", f"deleted by its {about.get('kind', 'owner')}")
            continue
        if cause:
            if about.get("uid"):
                found.setdefault(about["uid"], cause)
            found.setdefault(f"{namespace}/{about.get('name', '')}", cause)
    return found


def check_pod_causes(
    limits: Limits, memory: Memory, snapshot: Snapshot, final: bool = False
) -> list[Violation]:
    """Pods seen before and now gone or finished need a cause once the grace has passed
    (at once when `final`: the scene has settled and waited the grace out)."""
    listed = {p["metadata"]["uid"]: p for p in snapshot.pods}
    for uid, pod in listed.items():
        status = pod.get("status") or {}
        seen = memory.pods.get(uid)
        phase, reason = status.get("phase", ""), status.get("reason", "")
        if seen is None:
            seen = memory.pods[uid] = _PodSeen(
                pod["metadata"]["namespace"],
                pod["metadata"]["name"],
                uid,
                phase,
                reason,
                (pod["metadata"].get("labels") or {}).get(JOB_NAME_LABEL, ""),
            )
        seen.phase, seen.reason = phase, reason
        if phase in ("Succeeded", "Failed") and seen.ended_at is None:
            seen.ended_at = snapshot.at
    for uid, seen in memory.pods.items():
        if uid not in listed and seen.ended_at is None:
            seen.ended_at = snapshot.at
    causes = _causes(snapshot.events, snapshot.workloads)
    found = []
    for uid, seen in sorted(memory.pods.items(), key=lambda item: item[1].name):
        if seen.ended_at is None or uid in memory.reported:
            continue
        if seen.phase == "Succeeded" or (seen.phase == "Failed" and seen.reason):
            continue
        named = f"{seen.namespace}/{seen.name}"
        stopped = f"job:{seen.namespace}/{seen.job}" if seen.job else ""
        if uid in causes or named in causes or stopped in causes or named in memory.by_scene:
            continue
        if final or snapshot.at - seen.ended_at >= limits.cause_grace_seconds:
            memory.reported.add(uid)
            found.append(
                Violation(
                    POD_CAUSE,
                    snapshot.at,
                    f"pod {seen.namespace}/{seen.name} ended (last phase {seen.phase or 'none'}) with no "
                    f"recorded cause after {snapshot.at - seen.ended_at:.0f}s",
                )
            )
    return found


def reservation_of(workload: Obj) -> str | None:
    """When `workload`'s quota reservation in force began, or None if it holds none.

    The durable record of an admission is the Workload's own status, not its events: Kueue
    writes QuotaReserved=True and status.admission when it reserves quota and QuotaReserved=False
    (admission cleared) when it releases it (workload.SetQuotaReservation and
    UnsetQuotaReservationWithCondition, pkg/workload/workload.go in Kueue v0.19.2), through
    apimeta.SetStatusCondition, which moves lastTransitionTime only when the status flips. So
    a new lastTransitionTime on a True condition is a new reservation made after the previous
    one was released, and an unchanged one is the same admission however often Kueue writes it."""
    status = workload.get("status") or {}
    if not status.get("admission"):
        return None
    for entry in status.get("conditions") or []:
        if entry.get("type") == "QuotaReserved" and entry.get("status") == "True":
            return str(entry.get("lastTransitionTime", ""))
    return None


def _job_of(workload: Obj) -> str:
    for owner in workload["metadata"].get("ownerReferences") or []:
        if owner.get("kind") == "Job":
            return str(owner.get("name", ""))
    return ""


def _reserved(workload: Obj) -> dict[tuple[str, str], Fraction]:
    """(flavor, resource) -> what `workload`'s admission reserves."""
    found: dict[tuple[str, str], Fraction] = {}
    for podset in ((workload.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []:
        flavors = podset.get("flavors") or {}
        for resource, amount in (podset.get("resourceUsage") or {}).items():
            at = (flavors.get(resource, ""), resource)
            found[at] = found.get(at, Fraction(0)) + quantity(amount)
    return found


def check_admissions(memory: Memory, snapshot: Snapshot) -> list[Violation]:
    """No job admitted twice at once, read from the Workloads themselves (Kueue's Admitted
    events are no evidence either way: its scheduler emits one at every admission it makes,
    pkg/scheduler/scheduler.go:1217-1224, including a legitimate re-admission of a preempted
    Workload once its eviction completed).

    Violated when (1) the reservations the Workloads of one ClusterQueue hold together exceed
    its nominal quota plus borrowing limit (quota counted twice: two admissions overlapping),
    or (2) a Workload is reserved again while a pod its Job ran under the previous reservation
    still runs (pods of both admissions). A re-admission after the eviction completed, its
    pods gone and its quota released, holds: that is a requeue, not a second admission."""
    found: list[Violation] = []
    running: dict[tuple[str, str], set[str]] = {}
    for pod in snapshot.pods:
        meta = pod["metadata"]
        # A terminating pod (deletionTimestamp set) is one its Job no longer counts active, and
        # Kueue releases an evicted Workload's quota once its Job has no active pod
        # (pkg/controller/jobframework/reconciler.go:585-588, Job.IsActive is status.active != 0,
        # pkg/controller/jobs/job/job_controller.go:161-163): it is being stopped, not running on.
        if (pod.get("status") or {}).get("phase") == "Running" and not meta.get("deletionTimestamp"):
            job = (meta.get("labels") or {}).get(JOB_NAME_LABEL, "")
            running.setdefault((meta.get("namespace", ""), job), set()).add(meta["uid"])
    held: dict[str, dict[tuple[str, str], Fraction]] = {}
    holders: dict[str, list[str]] = {}
    for workload in snapshot.workloads:
        namespace, name = workload["metadata"].get("namespace", ""), workload["metadata"]["name"]
        key = f"{namespace}/{name}"
        since = reservation_of(workload)
        if since is None:
            continue
        job = _job_of(workload)
        pods = running.get((namespace, job), set()) if job else set()
        seen = memory.reservations.setdefault(key, [])
        if not seen or seen[-1] != since:
            still = pods & memory.running_under.get(key, set())
            if seen and still:
                found.append(
                    Violation(
                        ADMISSION,
                        snapshot.at,
                        f"Workload {key} reserved again (QuotaReserved since {since}, after {seen[-1]}) "
                        f"while {len(still)} pod(s) of its previous admission still run",
                    )
                )
            seen.append(since)
            memory.running_under[key] = set()
        memory.running_under[key] |= pods
        in_queue = str(((workload.get("status") or {}).get("admission") or {}).get("clusterQueue", ""))
        holders.setdefault(in_queue, []).append(name)
        for at, amount in _reserved(workload).items():
            held.setdefault(in_queue, {})[at] = held.get(in_queue, {}).get(at, Fraction(0)) + amount
    for cluster_queue in snapshot.cluster_queues:
        name = cluster_queue["metadata"]["name"]
        groups = (cluster_queue.get("spec") or {}).get("resourceGroups") or []
        for flavor, resource, entry in _resources(groups):
            limit = entry.get("borrowingLimit")
            total = held.get(name, {}).get((flavor, resource), Fraction(0))
            if limit is not None and total > quantity(entry.get("nominalQuota", 0)) + quantity(limit):
                found.append(
                    Violation(
                        ADMISSION,
                        snapshot.at,
                        f"Workloads {', '.join(sorted(holders[name]))} hold {total} {resource} of flavor "
                        f"{flavor} in ClusterQueue {name} at once, above its nominal "
                        f"{entry.get('nominalQuota', 0)} plus borrowing limit {limit}",
                    )
                )
    return found


class Invariants:
    """The six checks with their memory, for one scene run."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.memory = Memory()
        self.samples = 0

    def deleted_by_scene(self, namespace: str, names: Iterable[str]) -> None:
        """Record the scene's own deletion as the cause of these pods' end (the scene's
        timeline says it)."""
        self.memory.by_scene |= {f"{namespace}/{name}" for name in names}

    def check(self, snapshot: Snapshot, final: bool = False) -> list[Violation]:
        self.samples += 1
        return [
            *check_quota(snapshot),
            *check_quarantine_caps(self.limits, snapshot),
            *check_gate(self.limits, self.memory, snapshot),
            *check_pdb(self.limits, self.memory, snapshot),
            *check_pod_causes(self.limits, self.memory, snapshot, final),
            *check_admissions(self.memory, snapshot),
        ]


def limits_of(env: Environment, sample_seconds: float = 1.0) -> Limits:
    """The limits of `env` (the box's sped-up copy): quarantine caps at each pool's declared
    size, every provider's gate band, every inference service's Deployment."""
    pools = {p.name: dict(p.node_labels) for p in env.pools}
    controller = env.health.controller if env.health else None
    caps = {p.name: controller.cap.pool_cap(p) for p in controller.pools} if controller else {}
    gates: tuple[GateLimits, ...] = ()
    inference: tuple[InferenceLimits, ...] = ()
    if (overflow := env.overflow) is not None:
        gates = tuple(
            GateLimits(
                p.node_name,
                overflow.gate.taint_key,
                p.band.open_when_free_gpus_below,
                p.band.close_when_free_gpus_at_least,
                p.band.open_after_seconds,
                p.band.close_after_seconds,
                overflow.gate.reconcile_interval_seconds,
                str(overflow.gate.on_prometheus_unavailable),
            )
            for p in overflow.providers
        )
        inference = tuple(
            InferenceLimits(s.namespace, s.deployment, dict(s.pod_selector)) for s in overflow.inference
        )
    return Limits(
        pools,
        caps,
        controller.cap.max_nodes if controller else 0,
        env.health.taint_keys if env.health else (),
        gates,
        inference,
        sample_seconds,
    )


def gate_reading(metrics: Mapping[str, float], gates: Iterable[GateLimits]) -> GateReading:
    """The gate's /metrics samples (name{labels} -> value) as a GateReading; its gate label is
    the provider, the node vk-<provider>."""
    desired = {}
    for gate in gates:
        provider = gate.node.removeprefix("vk-")
        value = metrics.get(f'trainyard_gate_desired_closed{{gate="{provider}"}}')
        if value is not None:
            desired[gate.node] = value
    return GateReading(
        metrics.get("trainyard_gate_free_gpus"), desired, metrics.get("trainyard_gate_query_success")
    )


def take(kube: Kube, at: float, wall: float, namespaces: Iterable[str], gate: GateReading | None) -> Snapshot:
    """A Snapshot of the cluster now: every ClusterQueue, Cohort and node, and the pods, PDBs
    and events of `namespaces`."""
    snapshot = Snapshot(at, wall, gate=gate)
    snapshot.cluster_queues = kube.list(KUEUE_API, "ClusterQueue")
    snapshot.cohorts = kube.list(KUEUE_API, "Cohort")
    snapshot.nodes = kube.list("v1", "Node")
    for namespace in sorted(set(namespaces)):
        snapshot.pods += kube.list("v1", "Pod", namespace)
        snapshot.pdbs += kube.list("policy/v1", "PodDisruptionBudget", namespace)
        snapshot.events += kube.list("events.k8s.io/v1", "Event", namespace)
        snapshot.workloads += kube.list(KUEUE_API, "Workload", namespace)
    return snapshot
