"""Fault scene prometheus-down: Prometheus stops for two hold periods in the middle of a
spill, and comes back.

The loop first runs as in day-in-the-life (box/scenes/day_in_the_life.py, whose plan and
objects it reuses): the serving Deployment steady on the inference pool, a training gang
borrowing all but one node of it, the gate opening the virtual node and the displaced
replicas running there. Then the training ends (the scene deletes the Job); once the gate
reads the freed GPUs its close hold runs, and inside that hold the box's Prometheus is
stopped (SIGTERM, its TSDB kept) for two holds (2 x closeAfterSeconds): a gate that counted
blind time toward its hold would close blind. Then Prometheus is started again exactly as it
ran.

What must hold (docs/overflow.md, "When Prometheus fails"; docs/health.md): the gate neither
opens nor closes blind (`onPrometheusUnavailable: hold`: the virtual node stays open, no
transition is counted), the health controller quarantines nothing and releases nothing, the
outage is visible in Prometheus once it is back (the gate's and the health controller's
failed queries, `trainyard_*_errors_total{stage="query"}`, scraped here as their
ServiceMonitors' jobs), and the loop resumes without a person: the gate reads the free GPUs
again, closes after its hold, and the descheduler brings the replicas home. The invariants
of box/invariants.py are sampled at every step from the steady state until then. The blind
alerts (OverflowGateBlindWhileOpen, GpuHealthBlind) are reported, not required: they fire
only while a controller is still blind when Prometheus evaluates them, and both read again
within seconds of its return (docs/overflow.md, "Faults on the whole loop").
"""

from __future__ import annotations

import dataclasses
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from box.kube import Kube
from box.monitoring import query, scene_targets
from box.scenes import day_in_the_life as day
from box.scenes.context import SceneContext
from box.scenes.faults import (
    REACT_SECONDS,
    FaultResult,
    GateSpillSteps,
    Sampler,
    Spill,
    fired_between,
    metrics_of,
    process_url,
    start_again,
    stop_process,
    transitions,
    write_scrape_target,
)
from generators.model.health import TAINT_KEY

NAME = "prometheus-down"
GATE_PROCESS = "overflow-gate"  # the rendered Deployments' names: the box's process names
HEALTH_PROCESS = "gpu-health"
PROMETHEUS = "prometheus"
BLIND_ALERTS = ("OverflowGateBlindWhileOpen", "GpuHealthBlind")
# Each controller's scrape job and metric prefix: `<prefix>_errors_total{stage="query"}`.
COUNTERS = ((GATE_PROCESS, "trainyard_gate"), (HEALTH_PROCESS, "trainyard_health"))


def _quarantined(kube: Kube) -> set[str]:
    return {
        n["metadata"]["name"]
        for n in kube.list("v1", "Node")
        if any(t.get("key") == TAINT_KEY for t in (n.get("spec") or {}).get("taints") or [])
    }


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def prometheus_down(context: SceneContext) -> FaultResult:
    """Run the scene (module docstring); remove what it created, whatever happened."""
    env, state = context.env, context.state
    p = dataclasses.replace(day.plan(env), run_seconds=3600)  # the scene ends it itself
    assert env.overflow is not None and env.health is not None and env.health.controller is not None
    result = FaultResult(NAME)
    gate_url = process_url(state, GATE_PROCESS)
    health_url = process_url(state, HEALTH_PROCESS)
    if gate_url is None or health_url is None or not state.prometheus:
        result.problems.append("the box runs no gate, health controller or Prometheus: nothing to fault")
        return result
    sampler = Sampler(context, result, [p.service.namespace, p.namespace], lambda: gate_url)
    loop = Spill(context, sampler, p)
    scraped = _scrape_controllers(context, gate_url, health_url)
    run = _Outage(context, p, result, sampler, loop, gate_url)
    stopped = None
    try:
        with sampler.recording():
            run.scraped_before()
            run.spill()
            run.into_the_close_hold()
            stopped = stop_process(context.folder, PROMETHEUS)
            down_wall, down_at = time.time(), sampler.now()
            sampler.step(
                f"FAULT: Prometheus stopped (SIGTERM, TSDB kept) inside that hold, for {run.outage}s = "
                f"2 x closeAfterSeconds"
            )
            run.hold_blind(down_at)
            # Back: the same process, the same TSDB.
            start_again(context.folder, stopped)
            stopped = None
            up_at, up_wall = run.prometheus_back()
            run.outage_seen(up_at, up_wall, down_wall)
            run.loop_resumes(up_at)
    finally:
        if stopped is not None:  # never leave the box without its Prometheus
            start_again(context.folder, stopped)
        loop.remove()
        for path in scraped:
            path.unlink(missing_ok=True)
    return result


def _scrape_controllers(context: SceneContext, gate_url: str, health_url: str) -> list[Path]:
    """Scrape targets for the gate and the health controller, as their ServiceMonitors' jobs."""
    env = context.env
    assert env.overflow is not None and env.health is not None and env.health.controller is not None
    targets = scene_targets(context.folder)
    return [
        write_scrape_target(
            targets,
            f"fault-{name}",
            url.removeprefix("http://"),
            {"job": name, "namespace": namespace},
        )
        for name, url, namespace in (
            (GATE_PROCESS, gate_url, env.overflow.namespace),
            (HEALTH_PROCESS, health_url, env.health.controller.namespace),
        )
    ]


@dataclass
class _Outage(GateSpillSteps):
    """The scene's loop and what its steps read before the fault, shared by its steps."""

    quarantined: set[str] = field(default_factory=set)

    @property
    def outage(self) -> int:
        return 2 * self.hold

    def scraped_before(self) -> None:
        """Before the fault, Prometheus holds a sample of both controllers' failed-query
        counters (0, every stage exported from start-up): `increase()` counts from a series'
        first sample, so a counter first scraped after the outage, already at its failed
        queries, shows no increase and the outage would never be seen. The targets were
        written a moment ago; discovery and the first scrape take up to two 5 s intervals,
        and the fault comes about 9 s after this (a race the scene lost once, 2026-12-05)."""
        prometheus = self.context.state.prometheus

        def scraped() -> bool:
            return all(
                query(prometheus, f'{prefix}_errors_total{{job="{job}", stage="query"}}')
                for job, prefix in COUNTERS
            )

        self.sampler.until(
            scraped, REACT_SECONDS, "Prometheus scraping both controllers' failed-query counters"
        )

    def spill(self) -> None:
        """Before the fault: steady, then the spill (every step sampled from the steady state on)."""
        p, sampler, loop, kube = self.p, self.sampler, self.loop, self.context.kube
        loop.steady()
        self.quarantined = _quarantined(kube)
        sampler.step(
            f"steady: {p.replicas} replicas of {p.service.deployment} Ready on {p.pool.name}, "
            f"{p.provider.node_name} closed, quarantined nodes {sorted(self.quarantined) or 'none'}; "
            f"sampling the invariants every second from here"
        )
        self.result.timings["spill"] = loop.spill()
        self.opened, self.closed = transitions(self.gate_url, p.provider.name)
        sampler.step(
            f"spilled: gang {loop.job} ({p.gang} x {p.pool.gpus_per_node} GPUs) running, the gate "
            f"opened {p.provider.node_name} (transitions open {self.opened:g}, close {self.closed:g}), "
            f"{p.spilled} replicas there"
        )

    def into_the_close_hold(self) -> None:
        """The training ends; once the gate reads the freed GPUs its close hold runs, and the
        fault lands inside that hold: Prometheus down for two holds."""
        p, sampler, loop, gate_url = self.p, self.sampler, self.loop, self.gate_url
        sampler.step(f"the training ends (the scene deletes {loop.job}, {loop.end_training()} pods)")
        free = loop.freed(lambda: gate_url)
        sampler.step(
            f"the gate reads {free:g} free GPUs (close line "
            f"{p.provider.band.close_when_free_gpus_at_least}): its {self.hold}s close hold runs"
        )

    def hold_blind(self, down_at: float) -> None:
        """Prometheus down for the outage: the gate neither closes nor counts a transition, the
        health controller changes no quarantine; the gate reports its failed query."""
        p, sampler, kube, gate_url, outage = (
            self.p,
            self.sampler,
            self.context.kube,
            self.gate_url,
            self.outage,
        )
        blind: list[float] = []

        def during() -> str | None:
            if day._gate_closed(kube, p):
                return f"the gate closed {p.provider.node_name} blind, with Prometheus down"
            if transitions(gate_url, p.provider.name) != (self.opened, self.closed):
                return "the gate counted a transition with Prometheus down"
            if _quarantined(kube) != self.quarantined:
                return (
                    f"the health controller changed the quarantined nodes blind: {sorted(_quarantined(kube))}"
                )
            if (
                not blind
                and metrics_of(gate_url, "trainyard_gate_query_success").get("trainyard_gate_query_success")
                == 0
            ):
                blind.append(sampler.now())
            return None

        sampler.hold(outage, during)
        if not blind:
            sampler.problem("the gate never reported a failed query while Prometheus was down")
        else:
            self.result.timings["gate saw the outage"] = blind[0] - down_at
        sampler.step(
            f"held for {outage}s: {p.provider.node_name} still open, transitions unchanged, "
            f"quarantined nodes unchanged; the gate's query failing from +{blind[0] if blind else 0:.1f}s"
        )

    def prometheus_back(self) -> tuple[float, float]:
        """Prometheus ready again and the gate's query succeeding again; returns when it was
        started, on the sampler's clock and as a Unix time."""
        sampler, result, gate_url = self.sampler, self.result, self.gate_url
        up_at = sampler.now()
        sampler.until(lambda: _ready(self.context.state.prometheus), REACT_SECONDS, "Prometheus ready again")
        result.timings["Prometheus ready after start"] = sampler.now() - up_at
        sampler.step("Prometheus started again and ready")

        def query_back() -> bool:
            found = metrics_of(gate_url, "trainyard_gate_query_success")
            return found.get("trainyard_gate_query_success") == 1

        sampler.until(query_back, REACT_SECONDS, "the gate's free-GPU query succeeding again")
        result.timings["gate reading again"] = sampler.now() - up_at
        up_wall = time.time() - (sampler.now() - up_at)
        return up_at, up_wall

    def outage_seen(self, up_at: float, up_wall: float, down_wall: float) -> None:
        """The outage visible in Prometheus once back: both controllers' failed queries; the
        blind alerts reported, not required."""
        sampler, prometheus = self.sampler, self.context.state.prometheus

        def counted(job: str, prefix: str) -> float | None:
            found = query(
                prometheus,
                f'max(increase({prefix}_errors_total{{job="{job}", stage="query"}}[5m]))',
            )
            value = float(found[0]["value"][1]) if found else 0.0  # type: ignore[index]
            return value if value > 0 else None

        (gate_job, gate_prefix), (health_job, health_prefix) = COUNTERS
        gate_failed = sampler.until(
            lambda: counted(gate_job, gate_prefix),
            REACT_SECONDS,
            "the gate's failed queries in Prometheus",
        )
        health_failed = sampler.until(
            lambda: counted(health_job, health_prefix),
            REACT_SECONDS,
            "the health controller's failed queries in Prometheus",
        )
        self.result.timings["outage visible in Prometheus"] = sampler.now() - up_at
        fired = {a: fired_between(prometheus, a, down_wall, time.time()) for a in BLIND_ALERTS}
        sampler.step(
            f"the outage seen in Prometheus once back: failed queries, gate {gate_failed:.0f}, health "
            f"controller {health_failed:.0f}; blind alerts: "
            + ", ".join(f"{a} {_when(fired[a], up_wall)}" for a in BLIND_ALERTS)
        )

    def loop_resumes(self, up_at: float) -> None:
        """Without a person: the gate closes after its hold, the replicas come home, the
        quarantined nodes unchanged across the outage."""
        p, sampler, loop, kube, result = self.p, self.sampler, self.loop, self.context.kube, self.result
        sampler.until(
            lambda: day._gate_closed(kube, p), REACT_SECONDS + 2 * self.hold, "the gate closing on its own"
        )
        result.timings["gate closed after Prometheus back"] = sampler.now() - up_at
        sampler.step(f"the gate closed {p.provider.node_name} on its own (closeAfterSeconds {self.hold}s)")
        loop.home()
        result.timings["settled after Prometheus back"] = sampler.now() - up_at
        if _quarantined(kube) != self.quarantined:
            sampler.problem(f"quarantined nodes changed across the outage: {sorted(_quarantined(kube))}")
        loop.settle()
        sampler.step(
            f"settled: {p.replicas} replicas home, {p.provider.node_name} closed, transitions "
            f"{transitions(self.gate_url, p.provider.name)} (open, close)"
        )


def _when(fired: float | None, began: float) -> str:
    return "not fired (read again first)" if fired is None else f"fired +{fired - began:.1f}s after the start"
