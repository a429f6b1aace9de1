"""Fault scenes kueue-restart and apiserver-restart: a control-plane part restarted in the
middle of a Kueue preemption.

The set-up is the same for both: a `training` gang fills its team's topology queue up to
everything the queue may use (its nominal quota plus its borrowing limit, which is also all
its cohort holds, so nothing else fits), then a `training-critical` gang of a few nodes
arrives in the same queue. Kueue must preempt the first (withinClusterQueue: LowerPriority):
it marks its Workload Evicted, suspends its Job (the job controller deletes the pods),
releases the quota and admits the newcomer. Right after the first gang's Workload is seen
Evicted (the preemption under way), the fault:

- kueue-restart: the Kueue controller process is stopped (SIGTERM) and started again as it
  ran, once its webhook answers again;
- apiserver-restart: kube-apiserver is killed (SIGKILL) and started again as kwokctl ran it
  a few seconds later (etcd keeps the data); the scene goes on once /readyz answers.

What must hold (box/invariants.py at every sample the API answers, and the scene's checks):
Kueue's usage never above any ClusterQueue's nominal quota plus borrowing limit, nor above
what exists; every pod that ended has a recorded cause; the newcomer admitted once and all
its pods running; the preempted gang entirely stopped (no pod of it left running) and not
admitted again while the newcomer holds the quota; the gate and the health controller act
again after the fault (their passes go on).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

from box import kueue
from box.cluster import Cluster
from box.daemon import group_alive, verify_gone
from box.kube import Kube, Obj, is_true
from box.scenes import workloads
from box.scenes.context import SceneContext
from box.scenes.faults import (
    REACT_SECONDS,
    FaultResult,
    Sampler,
    command_of,
    metrics_of,
    process_url,
    start_again,
    stop_process,
)
from box.state import State
from box.up import _webhook_answers, cluster_of
from generators.model.environment import Environment
from generators.model.types import Pool

LOW, HIGH = "training", "training-critical"
NEWCOMER_NODES = 4
API_DOWN_SECONDS = 5  # how long kube-apiserver stays down before it is started again
SUPERVISED = ("kube-controller-manager", "kube-scheduler")  # static pods a kubelet restarts
ELECTED = ("overflow-gate", "gpu-health")  # exit 1 on a lost Lease; their Deployment restarts them


def _queue(env: Environment) -> tuple[Pool, str, str]:
    """The first topology queue: its pool, a namespace of its team and its LocalQueue."""
    for queue in env.cluster_queues:
        if queue.topology:
            team = next(t for t in env.teams if t.name == queue.team)
            pool = env.pool(queue.flavors[0].pool)
            return pool, team.namespaces[0], queue.name
    raise ValueError(f"{env.name} has no topology-aware queue: the preemption scenes need one")


def _may_use(kube: Kube, queue: str, pool: Pool) -> int:
    """Nominal plus borrowing limit of `queue` on `pool`'s GPUs, as Kueue holds them."""
    cq = kube.get(workloads.KUEUE_API, "ClusterQueue", queue) or {}
    for group in cq["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            if flavor["name"] == pool.name:
                for resource in flavor["resources"]:
                    if resource["name"] == pool.gpu_resource:
                        return int(resource["nominalQuota"]) + int(resource.get("borrowingLimit", 0))
    raise ValueError(f"{queue} has no {pool.gpu_resource} quota on {pool.name}")


def _gang(pool: Pool, name: str, namespace: str, queue: str, tier: str, nodes: int) -> Obj:
    container = workloads.gpu_container(pool, workloads.TRAINER_IMAGE, pool.gpus_per_node)
    return workloads.training_job(
        name, namespace, queue, tier, nodes, {"containers": [container]}, run_for="1h"
    )


def _admissions(kube: Kube, namespace: str, workload: str) -> int:
    return sum(
        1
        for e in kube.list("events.k8s.io/v1", "Event", namespace)
        if (e.get("regarding") or {}).get("name") == workload and e.get("reason") == "Admitted"
    )


def _admitted_at(kube: Kube, namespace: str, workload: str) -> list[str]:
    """When each Admitted event of `workload` was written, and its message (to tell a second
    admission from a restarted Kueue writing the event again)."""
    return [
        f"{e.get('eventTime') or e.get('deprecatedLastTimestamp')} "
        f"x{e.get('deprecatedCount', 1)}: {e.get('note', '')}"
        for e in kube.list("events.k8s.io/v1", "Event", namespace)
        if (e.get("regarding") or {}).get("name") == workload and e.get("reason") == "Admitted"
    ]


def _readmitted(name: str, reservations: list[str], events: list[str]) -> str:
    """What a second admission of the preempted gang after a Kueue restart is (read in the box's
    Kueue log and a watch of its Workload): not a double admission but a requeue. The restarted
    scheduler's first cycle, while the preempted (already Evicted) Workload still holds its
    quota, finds the newcomer NoFit ("insufficient unused quota", requeueReason NoFit in its
    log, no preemption issued) and parks it as inadmissible; once the Job has no active pod
    Kueue releases the quota (QuotaReserved=False, pkg/controller/jobframework/reconciler.go:
    585-588) and requeues the Workload at once (pkg/controller/core/workload_controller.go:
    1442-1472), while the parked newcomer is moved back only by the asynchronous requeue worker
    (pkg/cache/queue/inadmissible_workloads.go:199-211, about 0.6 s later). The next cycle
    admits the preempted gang alone into the freed quota (a new QuotaReserved transition, an
    Admitted event "wait time since reservation was 0s"), and the one after preempts it again
    for the newcomer. check_admissions fails the scene if that admission overlaps another
    (quota held twice) or the previous one (its pods still running)."""
    return (
        f"{name} admitted again after its eviction completed (quota reservations seen since "
        f"{', '.join(reservations)}; Admitted events {events}): the restarted Kueue requeued it "
        "before the parked newcomer and preempted it again; no overlap with another admission at any sample"
    )


def _running(kube: Kube, namespace: str, job: str) -> int:
    pods = kube.list("v1", "Pod", namespace, label_selector=f"job-name={job}")
    return sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")


def _restart_kueue(context: SceneContext, sampler: Sampler) -> float:
    """Kueue stopped and started again as box/kueue.py starts it: its binary's command line
    (read from /proc) inside the same private-/etc wrapper (the metrics certificate path)."""
    stopped = stop_process(context.folder, "kueue")
    workdir = Path(stopped.record.log).parent
    script = kueue._private_etc_script(workdir / "certs", workdir / "private-etc", stopped.argv)
    stopped.argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
    down = sampler.now()
    sampler.step("FAULT: the Kueue controller stopped (SIGTERM)")
    start_again(context.folder, stopped)
    sampler.until(lambda: _answers(context.kube), REACT_SECONDS, "Kueue's webhook answering again")
    return sampler.now() - down


def _command(pid: int) -> tuple[list[str], str, dict[str, str]]:
    """A running process's command line, working directory and environment, from /proc."""
    proc = Path("/proc") / str(pid)
    argv = [a.decode() for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
    environ = dict(
        item.decode().split("=", 1) for item in (proc / "environ").read_bytes().split(b"\0") if b"=" in item
    )
    return argv, os.readlink(proc / "cwd"), environ


def _start_component(folder: Path, name: str, command: tuple[list[str], str, dict[str, str]]) -> None:
    """Start a kwokctl component as kwokctl ran it (its log appended), and write its pid where
    kwokctl keeps it, as kwokctl writes it: the bare number, no newline. kwokctl reads the
    file with strconv.Atoi (sigs.k8s.io/kwok v0.8.0, pkg/kwokctl/runtime/exec.go:85-118 and
    :121-144): with a trailing newline it found the restarted component "already stopped",
    left it running at `delete cluster`, and `box down` waited out each one's grace period
    (45.6 s instead of about 7). `_kwokctl_sees` checks it."""
    argv, cwd, environ = command
    with (folder / "logs" / f"{name}.log").open("ab") as out:
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=environ,
            start_new_session=True,
        )
    (folder / "pids" / f"{name}.pid").write_text(str(process.pid), encoding="utf-8")


def _kwokctl_sees(cluster: Cluster, names: list[str]) -> list[str]:
    """Which of the components `names` kwokctl does not report Ready (`kwokctl get components
    -o wide`: Ready means its pid file names a running process, the check its `delete
    cluster` makes before it stops one)."""
    table = cluster._run("get", "components", "-o", "wide", timeout=60)
    ready = {row.split()[0] for row in table.splitlines() if row.split()[1:2] == ["Ready"]}
    return [name for name in names if name not in ready]


def _restart_apiserver(context: SceneContext, sampler: Sampler) -> float:
    """kube-apiserver killed (SIGKILL: a SIGTERM drains for up to a minute while it still
    serves, so the preemption would finish first) and started again exactly as kwokctl ran
    it (etcd keeps the data). kube-controller-manager and kube-scheduler end themselves when
    they cannot renew their Lease for 10 s (`leaderelection lost`); a kubelet restarts them
    in a cluster, kwokctl does not: the scene does, as a kubelet would, and says so."""
    cluster = cluster_of(context.env.name, context.folder)
    pids = cluster.component_pids()
    dead = [name for name in ("kube-apiserver", *SUPERVISED) if not group_alive(pids[name])]
    if dead:
        raise AssertionError(
            f"{', '.join(dead)} not running before the fault: the box is broken, bring it up again"
        )
    commands = {name: _command(pids[name]) for name in ("kube-apiserver", *SUPERVISED)}
    state = State.load(context.folder)
    assert state is not None
    controllers = {p.name: command_of(context.folder, p.name) for p in state.processes if p.name in ELECTED}
    pid = pids["kube-apiserver"]
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    verify_gone("kube-apiserver", pid, ())
    down = sampler.now()
    sampler.step(f"FAULT: kube-apiserver killed (SIGKILL; etcd keeps the data), down {API_DOWN_SECONDS}s")
    try:
        sampler.hold(API_DOWN_SECONDS, lambda: None)  # samples fail while it is down: counted, skipped
        _start_component(cluster.folder, "kube-apiserver", commands["kube-apiserver"])
        sampler.until(lambda: _api_ready(context.kube), REACT_SECONDS, "kube-apiserver ready again")
        took = sampler.now() - down
    finally:  # never leave the box without them, whatever failed above
        for name in SUPERVISED:
            if not group_alive(pids[name]):
                _start_component(cluster.folder, name, commands[name])
                sampler.step(
                    f"{name} had ended (its Lease lost while the API was down); restarted as a kubelet would"
                )
        for name, stopped in controllers.items():
            if not group_alive(stopped.record.pgid):
                start_again(context.folder, stopped)
                sampler.step(f"{name} had exited (its Lease lost: by design); restarted as its kubelet would")
    restarted = [
        name for name in ("kube-apiserver", *SUPERVISED) if pids[name] != cluster.component_pids()[name]
    ]
    unseen = _kwokctl_sees(cluster, restarted)
    if unseen:
        sampler.problem(
            f"kwokctl does not see the restarted {', '.join(unseen)}: its `delete cluster` would leave them"
        )
    return took


def _answers(kube: Kube) -> bool:
    """Kueue's webhook mutates a dry-run Job again (box/up.py's own check of Kueue)."""
    try:
        return _webhook_answers(kube)
    except Exception:  # refused while Kueue starts: the apiserver's 500 naming the webhook
        return False


def _api_ready(kube: Kube) -> bool:
    try:
        return bool(kube.raw_get("/version").get("gitVersion"))  # JSON; /readyz answers plain text
    except Exception:  # down: connection refused, or a 500 while it starts
        return False


def _passes(url: str, name: str) -> float:
    found = metrics_of(url, name)
    return found.get(name, 0.0)


def preemption(
    context: SceneContext, name: str, fault: Callable[[SceneContext, Sampler], float]
) -> FaultResult:
    env, kube, state = context.env, context.kube, context.state
    pool, namespace, queue = _queue(env)
    result = FaultResult(name)
    sampler = Sampler(context, result, [namespace], lambda: None)
    gate_url, health_url = process_url(state, "overflow-gate"), process_url(state, "gpu-health")
    tag = uuid.uuid4().hex[:6]
    low_name, high_name = f"fault-low-{tag}", f"fault-high-{tag}"
    created: list[str] = []
    try:
        with sampler.recording():
            gpus = _may_use(kube, queue, pool)
            nodes = gpus // pool.gpus_per_node
            sampler.active = True
            low = kube.create(_gang(pool, low_name, namespace, queue, LOW, nodes))
            created.append(low_name)

            def admitted(job: Obj) -> Obj | None:
                found = workloads.workload_of(kube, job)
                return found if is_true(found, "Admitted") else None

            low_workload = sampler.until(lambda: admitted(low), REACT_SECONDS, f"Kueue admitting {low_name}")
            sampler.until(
                lambda: _running(kube, namespace, low_name) == nodes or None,
                REACT_SECONDS,
                f"{nodes} pods running",
            )
            sampler.step(
                f"{low_name}: {nodes} x {pool.gpus_per_node} GPUs at {LOW} admitted in {queue} and running "
                f"({gpus} GPUs: nominal plus borrowing limit, all its cohort holds)"
            )
            high = kube.create(_gang(pool, high_name, namespace, queue, HIGH, NEWCOMER_NODES))
            created.append(high_name)
            arrived = sampler.now()

            def evicted() -> bool:
                found = workloads.workload_of(kube, low)
                return is_true(found, "Evicted")

            sampler.until(evicted, REACT_SECONDS, f"Kueue evicting {low_name}")
            sampler.step(
                f"{high_name} ({NEWCOMER_NODES} nodes at {HIGH}) arrived; Kueue marked {low_name} Evicted "
                f"{sampler.now() - arrived:.1f}s later, {_running(kube, namespace, low_name)} of its pods "
                "still running"
            )
            gate_before = (
                _passes(gate_url, "trainyard_gate_last_successful_query_timestamp_seconds") if gate_url else 0
            )
            health_before = (
                _passes(health_url, "trainyard_health_last_success_timestamp_seconds") if health_url else 0
            )
            result.timings["fault down to back"] = fault(context, sampler)
            back = sampler.now()
            sampler.step(f"back after {result.timings['fault down to back']:.1f}s")
            high_workload = sampler.until(
                lambda: admitted(high), REACT_SECONDS, f"Kueue admitting {high_name}"
            )
            sampler.until(
                lambda: _running(kube, namespace, high_name) == NEWCOMER_NODES or None,
                REACT_SECONDS,
                f"{NEWCOMER_NODES} pods of {high_name} running",
            )
            sampler.until(
                lambda: _running(kube, namespace, low_name) == 0 or None, REACT_SECONDS, f"{low_name} stopped"
            )
            result.timings["preemption done after the fault"] = sampler.now() - back
            if gate_url and health_url:
                sampler.until(
                    lambda: (
                        _passes(gate_url, "trainyard_gate_last_successful_query_timestamp_seconds")
                        > gate_before
                        and _passes(health_url, "trainyard_health_last_success_timestamp_seconds")
                        > health_before
                    ),
                    REACT_SECONDS,
                    "the gate and the health controller passing again",
                )
            sampler.hold(
                10,
                lambda: (
                    f"{low_name} admitted again"
                    if is_true(workloads.workload_of(kube, low), "Admitted")
                    else None
                ),
            )
            sampler.sample(final=True)
            # Admissions are read from the Workloads (box/invariants.py check_admissions, at every
            # sample): a reservation is a QuotaReserved=True transition. Admitted events are only
            # reported: Kueue's scheduler emits one at every admission it makes
            # (pkg/scheduler/scheduler.go:1217-1224 in Kueue v0.19.2), and after a restart it can
            # legitimately admit the preempted gang again (see `_readmitted`).
            reserved = sampler.checks.memory.reservations
            low_seen = reserved.get(f"{namespace}/{low_workload['metadata']['name']}", [])
            high_seen = reserved.get(f"{namespace}/{high_workload['metadata']['name']}", [])
            events = {
                low_name: _admissions(kube, namespace, low_workload["metadata"]["name"]),
                high_name: _admissions(kube, namespace, high_workload["metadata"]["name"]),
            }
            sampler.step(
                f"{high_name} admitted and its {NEWCOMER_NODES} pods running, {low_name} stopped "
                f"({_running(kube, namespace, low_name)} running) and pending; quota reservations seen "
                f"{low_name} {len(low_seen)}, {high_name} {len(high_seen)}; Admitted events {events}; "
                "the gate and the health controller passing again"
            )
            if len(low_seen) > 1 or events[low_name] > 1:
                sampler.step(
                    _readmitted(
                        low_name, low_seen, _admitted_at(kube, namespace, low_workload["metadata"]["name"])
                    )
                )
            if len(high_seen) != 1 or events[high_name] != 1:
                sampler.problem(
                    f"{high_name} reserved {len(high_seen)} times ({high_seen}), "
                    f"{events[high_name]} Admitted "
                    "events: one admission expected, nothing preempts it"
                )
    finally:
        for job in reversed(created):
            kube.delete("batch/v1", "Job", job, namespace)
        with contextlib.suppress(AssertionError):
            sampler.until(
                lambda: not kube.list("v1", "Pod", namespace, label_selector=workloads.SCENE_LABEL) or None,
                REACT_SECONDS,
                "the scene's pods gone",
            )
    return result


def kueue_restart(context: SceneContext) -> FaultResult:
    return preemption(context, "kueue-restart", _restart_kueue)


def apiserver_restart(context: SceneContext) -> FaultResult:
    return preemption(context, "apiserver-restart", _restart_apiserver)
