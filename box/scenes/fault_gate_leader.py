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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from box.scenes import day_in_the_life as day
from box.scenes.context import SceneContext
from box.scenes.faults import (
    REACT_SECONDS,
    FaultResult,
    Sampler,
    Spill,
    SpillSteps,
    Stopped,
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


def _leader(urls: dict[str, str]) -> str | None:
    return next((url for url in urls if _leading(url)), None)


def gate_leader_killed(context: SceneContext) -> FaultResult:
    """Run the scene (module docstring); remove what it created, whatever happened."""
    env, state, folder = context.env, context.state, context.folder
    p = day.plan(env)
    assert env.overflow is not None
    result = FaultResult(NAME)
    first = process_url(state, GATE_PROCESS)
    if first is None:
        result.problems.append("the box runs no overflow gate: nothing to fault")
        return result
    replica = start_replica(folder, GATE_PROCESS, REPLICA)
    second = f"http://127.0.0.1:{replica.ports[0]}"
    urls = {first: GATE_PROCESS, second: REPLICA}
    sampler = Sampler(context, result, [p.service.namespace, p.namespace], lambda: _leader(urls))
    loop = Spill(context, sampler, p)
    run = _Election(context, p, result, sampler, loop, urls, env.overflow.namespace)
    try:
        with sampler.recording():
            at_steady = run.steady_with_two_replicas(second)
            run.spill_and_end_training()
            kill = run.kill_the_leader(at_steady)
            run.standby_takes_the_lease(kill)
            run.new_leader_closes(kill, at_steady)
            start_again(folder, kill.stopped)
            run.killed_one_stands_by(kill)
            loop.settle()
            run.lease_renewed()
    finally:
        loop.remove()
        forget_process(folder, REPLICA)
    return result


@dataclass(frozen=True)
class _Kill:
    """The leader killed: its process (to start again), its url, the stand-by's, when, the
    Lease holder before, and the killed leader's transitions (open, close) then."""

    stopped: Stopped
    acting: str
    standby: str
    at: float
    holder_before: str
    transitions: tuple[float, float]


@dataclass
class _Election(SpillSteps):
    """The scene's loop and two gate replicas (url -> process name), shared by its steps."""

    urls: dict[str, str]
    namespace: str
    lease_name: str = GATE_PROCESS  # the rendered --lease-name

    def leader(self) -> str | None:
        return _leader(self.urls)

    def lease(self) -> dict[str, Any]:
        lease = self.context.kube.get(LEASE_API, "Lease", self.lease_name, self.namespace) or {}
        return dict(lease.get("spec") or {})

    def holder(self) -> str:
        return str(self.lease().get("holderIdentity") or "")

    def steady_with_two_replicas(self, second: str) -> tuple[float, float]:
        """The second replica up, one leading, the loop steady; returns the leader's transitions
        (open, close) then."""
        p, sampler, urls = self.p, self.sampler, self.urls
        sampler.until(lambda: _answers(second), REACT_SECONDS, "the second replica up")
        acting = sampler.until(self.leader, REACT_SECONDS, "one gate leading")
        if all(_leading(url) for url in urls):
            sampler.problem("both gate replicas report leading")
        self.loop.steady()
        at_steady = transitions(acting, p.provider.name)
        sampler.step(
            f"steady, two gate replicas: {urls[acting]} leads (Lease holder {self.holder()}), the other "
            f"stands by; {p.provider.node_name} closed; sampling the invariants every second"
        )
        return at_steady

    def spill_and_end_training(self) -> None:
        """The spill, then the training ends: once the leader reads the freed GPUs its close
        hold runs."""
        p, sampler, loop = self.p, self.sampler, self.loop
        self.result.timings["spill"] = loop.spill()
        sampler.step(f"spilled: the gate opened {p.provider.node_name}, {p.spilled} replicas there")
        sampler.step(f"the training ends (the scene deletes {loop.job}, {loop.end_training()} pods)")
        free = loop.freed(self.leader)
        sampler.step(f"the leader reads {free:g} free GPUs: its {self.hold}s close hold runs")

    def kill_the_leader(self, at_steady: tuple[float, float]) -> _Kill:
        """SIGKILL the leader inside its close hold (no clean-up, no Lease release)."""
        p, sampler, urls = self.p, self.sampler, self.urls
        acting = sampler.until(self.leader, REACT_SECONDS, "the leader")
        before = self.holder()
        opened_before = transitions(acting, p.provider.name)
        killed = kill_process(self.context.folder, urls[acting])
        killed_at = sampler.now()
        standby = next(url for url in urls if url != acting)
        sampler.step(
            f"FAULT: leader {urls[acting]} killed (SIGKILL) inside its close hold; its transitions "
            f"(open, close) since the steady state {opened_before[0] - at_steady[0]:g}, "
            f"{opened_before[1] - at_steady[1]:g}"
        )
        return _Kill(killed, acting, standby, killed_at, before, opened_before)

    def standby_takes_the_lease(self, kill: _Kill) -> None:
        """The stand-by takes the Lease within its duration plus one retry period."""
        sampler, before, standby, killed_at = self.sampler, kill.holder_before, kill.standby, kill.at
        duration = float(self.lease().get("leaseDurationSeconds") or 15)
        taken_by = sampler.until(
            lambda: self.holder() if self.holder() not in ("", before) and _leading(standby) else None,
            REACT_SECONDS,
            "the stand-by taking the Lease",
        )
        taken = sampler.now() - killed_at
        self.result.timings["Lease taken after the kill"] = taken
        sampler.step(
            f"{self.urls[standby]} took the Lease ({taken_by}) {taken:.1f}s after the kill "
            f"(leaseDurationSeconds {duration:g}, retry {RETRY_SECONDS}s)"
        )
        if taken > duration + RETRY_SECONDS + 2 * sampler.checks.limits.sample_seconds:
            sampler.problem(f"the Lease was taken {taken:.1f}s after the kill, beyond its {duration:g}s")

    def new_leader_closes(self, kill: _Kill, at_steady: tuple[float, float]) -> None:
        """The new leader closes once: one open and one close over both processes."""
        p, sampler, standby, killed_at, opened_before = (
            self.p,
            self.sampler,
            kill.standby,
            kill.at,
            kill.transitions,
        )
        sampler.until(
            self.loop.closed, REACT_SECONDS + 2 * self.hold, f"the new leader closing {p.provider.node_name}"
        )
        self.result.timings["closed after the kill"] = sampler.now() - killed_at
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
            sampler.problem(f"the killed leader counted (open, close) {spill} in this spill; (1, 0) expected")

    def killed_one_stands_by(self, kill: _Kill) -> None:
        """The killed process, started again, stands by; the replicas come home."""
        p, sampler, urls, restarted, standby = self.p, self.sampler, self.urls, kill.acting, kill.standby
        sampler.until(lambda: _answers(restarted), REACT_SECONDS, "the killed replica back")
        self.loop.home()
        if _leading(restarted):
            sampler.problem(f"the restarted {urls[restarted]} leads beside {urls[standby]}")
        sampler.step(
            f"{urls[restarted]} started again and stands by; all {p.replicas} replicas home, "
            f"{p.provider.node_name} closed, Lease held by {self.holder()}"
        )

    def lease_renewed(self) -> None:
        renewed = self.lease()
        stamp = renewed.get("renewTime")
        if stamp:
            age = time.time() - datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
            self.sampler.step(f"the Lease renewed {age:.1f}s ago by {renewed.get('holderIdentity')}")
