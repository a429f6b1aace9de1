"""Fault scene gate-leader-killed: the overflow gate's leader is killed in the middle of a
transition, with two replicas as rendered.

The box runs one gate process; the scene starts a second one exactly as the rendered
Deployment's second pod would run (same arguments, its own identity and metrics port), which
stands by on the Lease. The loop then runs as in day-in-the-life up to the spill, the
training ends, and once the leader reads the freed GPUs its close hold runs: inside that
hold (the transition under way) the leader is killed with SIGKILL (no clean-up, no Lease
release, as a node loss or an OOM kill). Later the killed process is started again, as its
pod would be, and must stand by.

What must hold (docs/overflow.md, "Faults on the whole loop"): the stand-by takes the Lease
within the Lease's duration (plus one retry period) of the kill, reads the state from the
node (open), holds its own close hold and closes once: one open and one close for the whole
spill over both processes, none doubled, none lost; the node's taint never disagrees with the
acting gate's recorded state for two samples in a row (box/invariants.py, sampled every
second from the steady state until the replicas are home).
"""

from __future__ import annotations

import time
from datetime import datetime

from box.scenes import day_in_the_life as day
from box.scenes.context import SceneContext
from box.scenes.faults import (
    REACT_SECONDS,
    FaultResult,
    Sampler,
    Spill,
    forget_process,
    kill_process,
    metrics_of,
    process_url,
    start_again,
    start_replica,
    transitions,
)

NAME = "gate-leader-killed"
GATE_PROCESS = "overflow-gate"
REPLICA = "overflow-gate-2"
LEASE_API = "coordination.k8s.io/v1"
RETRY_SECONDS = 2  # the gate's --retry-seconds default (gate/trainyard_gate/runtime/election.py)


def _leading(url: str) -> bool:
    try:
        return metrics_of(url, "trainyard_gate_leader").get("trainyard_gate_leader") == 1
    except OSError:
        return False


def _answers(url: str) -> bool:
    try:
        return "trainyard_gate_leader" in metrics_of(url, "trainyard_gate_leader")
    except OSError:
        return False


def _patches(url: str, action: str) -> float:
    found = metrics_of(url, "trainyard_gate_node_patches_total")
    return sum(v for k, v in found.items() if f'action="{action}"' in k and 'dry_run="false"' in k)


def gate_leader_killed(context: SceneContext) -> FaultResult:
    """Run the scene (module docstring); remove what it created, whatever happened."""
    env, kube, state, folder = context.env, context.kube, context.state, context.folder
    p = day.plan(env)
    assert env.overflow is not None
    hold = p.provider.band.close_after_seconds
    result = FaultResult(NAME)
    first = process_url(state, GATE_PROCESS)
    if first is None:
        result.problems.append("the box runs no overflow gate: nothing to fault")
        return result
    replica = start_replica(folder, GATE_PROCESS, REPLICA)
    second = f"http://127.0.0.1:{replica.ports[0]}"
    urls = {first: GATE_PROCESS, second: REPLICA}

    def leader() -> str | None:
        return next((url for url in urls if _leading(url)), None)

    sampler = Sampler(context, result, [p.service.namespace, p.namespace], leader)
    loop = Spill(context, sampler, p)
    namespace = env.overflow.namespace
    lease_name = GATE_PROCESS  # the rendered --lease-name

    def holder() -> str:
        lease = kube.get(LEASE_API, "Lease", lease_name, namespace) or {}
        return str((lease.get("spec") or {}).get("holderIdentity") or "")

    try:
        with sampler.recording():
            sampler.until(lambda: _answers(second), REACT_SECONDS, "the second replica up")
            acting = sampler.until(leader, REACT_SECONDS, "one gate leading")
            if _leading(first) and _leading(second):
                sampler.problem("both gate replicas report leading")
            loop.steady()
            at_steady = transitions(acting, p.provider.name)
            sampler.step(
                f"steady, two gate replicas: {urls[acting]} leads (Lease holder {holder()}), the other "
                f"stands by; {p.provider.node_name} closed; sampling the invariants every second"
            )
            result.timings["spill"] = loop.spill()
            sampler.step(f"spilled: the gate opened {p.provider.node_name}, {p.spilled} replicas there")
            sampler.step(f"the training ends (the scene deletes {loop.job}, {loop.end_training()} pods)")
            free = loop.freed(leader)
            sampler.step(f"the leader reads {free:g} free GPUs: its {hold}s close hold runs")

            acting = sampler.until(leader, REACT_SECONDS, "the leader")
            before = holder()
            opened_before = transitions(acting, p.provider.name)
            killed = kill_process(folder, urls[acting])
            killed_at = sampler.now()
            standby = next(url for url in urls if url != acting)
            sampler.step(
                f"FAULT: leader {urls[acting]} killed (SIGKILL) inside its close hold; its transitions "
                f"(open, close) since the steady state {opened_before[0] - at_steady[0]:g}, "
                f"{opened_before[1] - at_steady[1]:g}"
            )
            lease = kube.get(LEASE_API, "Lease", lease_name, namespace) or {}
            duration = float((lease.get("spec") or {}).get("leaseDurationSeconds") or 15)
            taken_by = sampler.until(
                lambda: holder() if holder() not in ("", before) and _leading(standby) else None,
                REACT_SECONDS,
                "the stand-by taking the Lease",
            )
            taken = sampler.now() - killed_at
            result.timings["Lease taken after the kill"] = taken
            sampler.step(
                f"{urls[standby]} took the Lease ({taken_by}) {taken:.1f}s after the kill "
                f"(leaseDurationSeconds {duration:g}, retry {RETRY_SECONDS}s)"
            )
            if taken > duration + RETRY_SECONDS + 2 * sampler.checks.limits.sample_seconds:
                sampler.problem(f"the Lease was taken {taken:.1f}s after the kill, beyond its {duration:g}s")
            sampler.until(
                loop.closed, REACT_SECONDS + 2 * hold, f"the new leader closing {p.provider.node_name}"
            )
            result.timings["closed after the kill"] = sampler.now() - killed_at
            after = transitions(standby, p.provider.name)
            taints = _patches(standby, "taint")
            sampler.step(
                f"the new leader closed {p.provider.node_name}: its transitions (open, close) {after}, "
                f"taint patches {taints:g}"
            )
            if after != (0.0, 1.0) or taints != 1:
                sampler.problem(
                    f"the new leader counted transitions {after} and {taints:g} taint patches; "
                    "one close and one patch expected (none doubled, none lost)"
                )
            spill = (opened_before[0] - at_steady[0], opened_before[1] - at_steady[1])
            if spill != (1.0, 0.0):
                sampler.problem(
                    f"the killed leader counted (open, close) {spill} in this spill; (1, 0) expected"
                )

            start_again(folder, killed)
            restarted = acting
            sampler.until(lambda: _answers(restarted), REACT_SECONDS, "the killed replica back")
            loop.home()
            if _leading(restarted):
                sampler.problem(f"the restarted {urls[restarted]} leads beside {urls[standby]}")
            sampler.step(
                f"{urls[restarted]} started again and stands by; all {p.replicas} replicas home, "
                f"{p.provider.node_name} closed, Lease held by {holder()}"
            )
            loop.settle()
            renewed = (kube.get(LEASE_API, "Lease", lease_name, namespace) or {}).get("spec") or {}
            stamp = renewed.get("renewTime")
            if stamp:
                age = time.time() - datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
                sampler.step(f"the Lease renewed {age:.1f}s ago by {renewed.get('holderIdentity')}")
    finally:
        loop.remove()
        forget_process(folder, REPLICA)
    return result
