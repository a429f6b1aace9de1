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
from generators.model.health import TAINT_KEY

NAME = "quarantine-storm"
HEALTH_PROCESS = "gpu-health"
DCGM_PROCESS = "dcgm-exporter-fake"
CAP_ALERT = "GpuHealthCapHoldsBack"


def quarantine_storm(context: SceneContext) -> FaultResult:
    """Run the scene (module docstring); clear every fault and wait for the release."""
    env, kube, state = context.env, context.kube, context.state
    result = FaultResult(NAME)
    controller = env.health.controller if env.health else None
    health_url, dcgm_url = process_url(state, HEALTH_PROCESS), process_url(state, DCGM_PROCESS)
    if controller is None or health_url is None or dcgm_url is None:
        result.problems.append("the box runs no health controller or dcgm-exporter: nothing to fault")
        return result
    pool = controller.pools[0]
    cap = min(controller.cap.pool_cap(pool), controller.cap.max_nodes)
    selector = ",".join(f"{k}={v}" for k, v in sorted(pool.node_labels.items()))
    names = sorted(n["metadata"]["name"] for n in kube.list("v1", "Node", label_selector=selector))
    first, second = names[: cap + 2], names[cap + 2 : 2 * (cap + 2)]
    namespaces = [t.namespaces[0] for t in env.teams]
    sampler = Sampler(context, result, namespaces, lambda: None)
    exporter = Exporter(dcgm_url)
    held_key = f'trainyard_health_held_back{{pool="{pool.name}"}}'
    interval = controller.reconcile_interval_seconds
    release = controller.release_after_seconds + xid_window(env)
    target = write_scrape_target(
        scene_targets(context.folder),
        f"fault-{HEALTH_PROCESS}",
        health_url.removeprefix("http://"),
        {"job": HEALTH_PROCESS, "namespace": controller.namespace},
    )

    def quarantined() -> list[str]:
        return sorted(
            n["metadata"]["name"]
            for n in kube.list("v1", "Node", label_selector=selector)
            if any(t.get("key") == TAINT_KEY for t in (n.get("spec") or {}).get("taints") or [])
        )

    def held_back() -> float:
        return health_metrics(health_url).get(held_key, 0.0)

    try:
        with sampler.recording():
            sampler.until(
                lambda: not quarantined(), REACT_SECONDS + release, "no quarantined node before the storm"
            )
            sampler.active = True
            sampler.step(
                f"calm: no node of {pool.name} ({len(names)} nodes) quarantined; cap {cap} in the pool "
                f"(maxPercentOfPool {controller.cap.max_percent_of_pool}%, own {controller.cap.own(pool)}), "
                f"maxNodes {controller.cap.max_nodes}; sampling the invariants every second"
            )
            began = sampler.now()
            for name in first:
                exporter.fault(name, xid=SPIKE_XID)
            sampler.step(f"STORM: XID {SPIKE_XID} on {len(first)} nodes at once: {', '.join(first)}")
            taken = sampler.until(lambda: quarantined() or None, REACT_SECONDS, "the first quarantine")
            result.timings["first quarantine"] = sampler.now() - began
            sampler.until(
                lambda: held_back() >= len(first) - cap or None, REACT_SECONDS, "the rest held back"
            )
            sampler.step(f"quarantined {taken} (the cap used), held back {held_back():g}")
            passes = 2 * interval
            sampler.hold(passes, lambda: None)
            for name in second:
                exporter.fault(name, xid=SPIKE_XID)
            sampler.step(
                f"STORM grows {passes}s later: XID {SPIKE_XID} on {len(second)} more: {', '.join(second)}"
            )
            wanted = len(first) + len(second) - cap
            sampler.until(lambda: held_back() >= wanted or None, REACT_SECONDS, f"{wanted} nodes held back")
            alerted = sampler.until(
                lambda: CAP_ALERT in firing(state.prometheus) or None, REACT_SECONDS, CAP_ALERT
            )
            result.timings[f"{CAP_ALERT} firing"] = sampler.now() - began
            sampler.step(
                f"held: quarantined {quarantined()}, held back {held_back():g}; {CAP_ALERT} firing: {alerted}"
            )
            if quarantined() != taken:
                sampler.problem(f"the quarantined nodes changed during the storm: {taken} -> {quarantined()}")

            exporter.heal()
            healed = sampler.now()
            sampler.step(
                f"the errors stop (every fault cleared); release expected after the XID window "
                f"{xid_window(env)}s + releaseAfterSeconds {controller.release_after_seconds}s"
            )
            sampler.until(lambda: not quarantined(), REACT_SECONDS + release, "the release")
            result.timings["released after the errors stopped"] = sampler.now() - healed
            if sampler.now() - healed < controller.release_after_seconds - 2:
                sampler.problem(f"released {sampler.now() - healed:.0f}s after, before releaseAfterSeconds")
            sampler.hold(
                2 * interval,
                lambda: f"{quarantined()} quarantined after the release" if quarantined() else None,
            )
            sampler.sample(final=True)
            sampler.step(
                f"released {taken} {result.timings['released after the errors stopped']:.1f}s "
                "after the errors "
                "stopped; nothing else "
                f"quarantined over two more passes; held back {held_back():g}"
            )
    finally:
        exporter.heal()
        target.unlink(missing_ok=True)
        deadline = time.monotonic() + REACT_SECONDS + release
        while quarantined() and time.monotonic() < deadline:  # leave the box as found
            time.sleep(1)
    return result
