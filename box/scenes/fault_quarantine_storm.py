"""Fault scene quarantine-storm: XID errors on more nodes than the quarantine cap at once,
then on more a little later, then the errors stop.

The box's synthetic dcgm-exporter (box/dcgm_fake.py) reports an XID that means "replace"
(79) on cap + 2 nodes of the first watched pool at once, and on cap + 2 more after two of the
health controller's passes (the storm grows while the first wave is being handled). Then
every fault is cleared.

What must hold (docs/health.md, "What the cap protects"): at every sample (box/invariants.py)
the quarantined nodes stay within the per-pool cap and `cap.maxNodes`; the controller does
act (the cap is used, not refused: a node is quarantined) and counts the rest as held back;
the cap-held alert (GpuHealthCapHoldsBack, on the controller's own series, scraped here as
its ServiceMonitor's job) fires; once the errors stop, the quarantined node is released
after the XID window and `releaseAfterSeconds`, and none of the held-back nodes is
quarantined in its place.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from box.monitoring import scene_targets
from box.scenes.bad_node import SPIKE_XID, Exporter, health_metrics, xid_window
from box.scenes.context import SceneContext
from box.scenes.faults import (
    REACT_SECONDS,
    FaultResult,
    Sampler,
    firing,
    process_url,
    write_scrape_target,
)
from generators.model.health import TAINT_KEY, Controller
from generators.model.types import Pool

NAME = "quarantine-storm"
HEALTH_PROCESS = "gpu-health"
DCGM_PROCESS = "dcgm-exporter-fake"
CAP_ALERT = "GpuHealthCapHoldsBack"


def quarantine_storm(context: SceneContext) -> FaultResult:
    """Run the scene (module docstring); clear every fault and wait for the release."""
    result = FaultResult(NAME)
    storm = _Storm.of(context, result)
    if storm is None:
        result.problems.append("the box runs no health controller or dcgm-exporter: nothing to fault")
        return result
    target = write_scrape_target(
        scene_targets(context.folder),
        f"fault-{HEALTH_PROCESS}",
        storm.health_url.removeprefix("http://"),
        {"job": HEALTH_PROCESS, "namespace": storm.controller.namespace},
    )
    try:
        with storm.sampler.recording():
            storm.calm()
            began, taken = storm.first_wave()
            storm.second_wave(began, taken)
            storm.errors_stop(taken)
    finally:
        storm.exporter.heal()
        target.unlink(missing_ok=True)
        deadline = time.monotonic() + REACT_SECONDS + storm.release
        while storm.quarantined() and time.monotonic() < deadline:  # leave the box as found
            time.sleep(1)
    return result


@dataclass
class _Storm:
    """The scene's pool, its two waves of nodes and what it reads, shared by its steps."""

    context: SceneContext
    result: FaultResult
    controller: Controller
    health_url: str
    sampler: Sampler
    exporter: Exporter
    names: list[str]
    selector: str

    @classmethod
    def of(cls, context: SceneContext, result: FaultResult) -> _Storm | None:
        """The storm on the first watched pool, or None if the box runs no health controller or
        dcgm-exporter."""
        env, kube, state = context.env, context.kube, context.state
        controller = env.health.controller if env.health else None
        health_url, dcgm_url = process_url(state, HEALTH_PROCESS), process_url(state, DCGM_PROCESS)
        if controller is None or health_url is None or dcgm_url is None:
            return None
        selector = ",".join(f"{k}={v}" for k, v in sorted(controller.pools[0].node_labels.items()))
        names = sorted(n["metadata"]["name"] for n in kube.list("v1", "Node", label_selector=selector))
        namespaces = [t.namespaces[0] for t in env.teams]
        sampler = Sampler(context, result, namespaces, lambda: None)
        return cls(context, result, controller, health_url, sampler, Exporter(dcgm_url), names, selector)

    @property
    def pool(self) -> Pool:
        return self.controller.pools[0]

    @property
    def cap(self) -> int:
        return min(self.controller.cap.pool_cap(self.pool), self.controller.cap.max_nodes)

    @property
    def first(self) -> list[str]:
        return self.names[: self.cap + 2]

    @property
    def second(self) -> list[str]:
        return self.names[self.cap + 2 : 2 * (self.cap + 2)]

    @property
    def interval(self) -> int:
        return self.controller.reconcile_interval_seconds

    @property
    def release(self) -> int:
        return self.controller.release_after_seconds + xid_window(self.context.env)

    def quarantined(self) -> list[str]:
        return sorted(
            n["metadata"]["name"]
            for n in self.context.kube.list("v1", "Node", label_selector=self.selector)
            if any(t.get("key") == TAINT_KEY for t in (n.get("spec") or {}).get("taints") or [])
        )

    def held_back(self) -> float:
        held_key = f'trainyard_health_held_back{{pool="{self.pool.name}"}}'
        return health_metrics(self.health_url).get(held_key, 0.0)

    def calm(self) -> None:
        """Wait for no quarantined node, then sample the invariants from here."""
        sampler, controller, pool = self.sampler, self.controller, self.pool
        sampler.until(
            lambda: not self.quarantined(),
            REACT_SECONDS + self.release,
            "no quarantined node before the storm",
        )
        sampler.active = True
        sampler.step(
            f"calm: no node of {pool.name} ({len(self.names)} nodes) quarantined; cap {self.cap} in the pool "
            f"(maxPercentOfPool {controller.cap.max_percent_of_pool}%, own {controller.cap.own(pool)}), "
            f"maxNodes {controller.cap.max_nodes}; sampling the invariants every second"
        )

    def first_wave(self) -> tuple[float, list[str]]:
        """XID on cap + 2 nodes at once: one quarantined (the cap used), the rest held back.
        Returns when the storm began and the nodes quarantined."""
        sampler, first = self.sampler, self.first
        began = sampler.now()
        for name in first:
            self.exporter.fault(name, xid=SPIKE_XID)
        sampler.step(f"STORM: XID {SPIKE_XID} on {len(first)} nodes at once: {', '.join(first)}")
        taken = sampler.until(lambda: self.quarantined() or None, REACT_SECONDS, "the first quarantine")
        self.result.timings["first quarantine"] = sampler.now() - began
        sampler.until(
            lambda: self.held_back() >= len(first) - self.cap or None, REACT_SECONDS, "the rest held back"
        )
        sampler.step(f"quarantined {taken} (the cap used), held back {self.held_back():g}")
        return began, taken

    def second_wave(self, began: float, taken: list[str]) -> None:
        """Two passes later, XID on cap + 2 more: all held back, the cap alert firing, the
        quarantined nodes unchanged."""
        sampler, second = self.sampler, self.second
        passes = 2 * self.interval
        sampler.hold(passes, lambda: None)
        for name in second:
            self.exporter.fault(name, xid=SPIKE_XID)
        sampler.step(
            f"STORM grows {passes}s later: XID {SPIKE_XID} on {len(second)} more: {', '.join(second)}"
        )
        wanted = len(self.first) + len(second) - self.cap
        sampler.until(lambda: self.held_back() >= wanted or None, REACT_SECONDS, f"{wanted} nodes held back")
        state = self.context.state
        alerted = sampler.until(
            lambda: CAP_ALERT in firing(state.prometheus) or None, REACT_SECONDS, CAP_ALERT
        )
        self.result.timings[f"{CAP_ALERT} firing"] = sampler.now() - began
        sampler.step(
            f"held: quarantined {self.quarantined()}, held back {self.held_back():g}; "
            f"{CAP_ALERT} firing: {alerted}"
        )
        if self.quarantined() != taken:
            sampler.problem(
                f"the quarantined nodes changed during the storm: {taken} -> {self.quarantined()}"
            )

    def errors_stop(self, taken: list[str]) -> None:
        """Every fault cleared: the release after the XID window and releaseAfterSeconds, and
        nothing quarantined in its place over two more passes."""
        sampler, controller, result = self.sampler, self.controller, self.result
        self.exporter.heal()
        healed = sampler.now()
        sampler.step(
            f"the errors stop (every fault cleared); release expected after the XID window "
            f"{xid_window(self.context.env)}s + releaseAfterSeconds {controller.release_after_seconds}s"
        )
        sampler.until(lambda: not self.quarantined(), REACT_SECONDS + self.release, "the release")
        result.timings["released after the errors stopped"] = sampler.now() - healed
        if sampler.now() - healed < controller.release_after_seconds - 2:
            sampler.problem(f"released {sampler.now() - healed:.0f}s after, before releaseAfterSeconds")
        sampler.hold(
            2 * self.interval,
            lambda: f"{self.quarantined()} quarantined after the release" if self.quarantined() else None,
        )
        sampler.sample(final=True)
        sampler.step(
            f"released {taken} {result.timings['released after the errors stopped']:.1f}s "
            "after the errors "
            "stopped; nothing else "
            f"quarantined over two more passes; held back {self.held_back():g}"
        )
