"""Scenes on a running box (`generate.py box scene NAME ENV`): what the real controllers do.

Each scene is one module here holding a `run(context) -> SceneResult` function. A scene
writes what a user writes (Jobs, Deployments, a pod, a metric series) and reads back only
what the controllers wrote (Workload admission, pod placement, taints, events), prints what
it saw line by line, and removes what it created. `ok` is False when what the controllers
did breaks a promise of the README or docs/: the CLI then exits 1. A scene imports what it
is given from context.py, never from this registry, which imports the scenes.
"""

from __future__ import annotations

from collections.abc import Callable

from box.scenes.context import SceneContext, SceneResult


def _gang_placement(context: SceneContext) -> SceneResult:
    from box.scenes import gang_placement

    return gang_placement.gang_placement(context.kube, context.env)


def _day_in_the_life(context: SceneContext) -> SceneResult:
    from box.scenes import day_in_the_life

    return day_in_the_life.day_in_the_life(context)


def _bad_node(context: SceneContext) -> SceneResult:
    from box.scenes import bad_node

    state = context.state
    return bad_node.bad_node(
        context.kube,
        context.env,
        state.processes,
        state.prometheus,
        context.folder,
        state.cluster,
        context.say,
    )


def _inference_scales(context: SceneContext) -> SceneResult:
    from box.scenes import inference_scales

    return inference_scales.inference_scales(context.kube, context.env, context.folder, context.say)


def _immutable_change(context: SceneContext) -> SceneResult:
    from box.scenes import immutable_change

    return immutable_change.run(context)


def _first_sync(context: SceneContext) -> SceneResult:
    from box.scenes import first_sync

    return first_sync.first_sync(context)


def _pull_request(context: SceneContext) -> SceneResult:
    from box.scenes import pull_request

    return pull_request.pull_request(context)


def _no_drift(context: SceneContext) -> SceneResult:
    from box.scenes import no_drift

    return no_drift.no_drift(context)


def _replace_and_prune(context: SceneContext) -> SceneResult:
    from box.scenes import replace_and_prune

    return replace_and_prune.replace_and_prune(context)


def _prometheus_down(context: SceneContext) -> SceneResult:
    from box.scenes import fault_prometheus_down

    return fault_prometheus_down.prometheus_down(context)


def _gate_leader_killed(context: SceneContext) -> SceneResult:
    from box.scenes import fault_gate_leader

    return fault_gate_leader.gate_leader_killed(context)


def _quarantine_storm(context: SceneContext) -> SceneResult:
    from box.scenes import fault_quarantine_storm

    return fault_quarantine_storm.quarantine_storm(context)


def _provider_down(context: SceneContext) -> SceneResult:
    from box.scenes import fault_provider_down

    return fault_provider_down.provider_down(context)


def _kueue_restart(context: SceneContext) -> SceneResult:
    from box.scenes import fault_preemption

    return fault_preemption.kueue_restart(context)


def _apiserver_restart(context: SceneContext) -> SceneResult:
    from box.scenes import fault_preemption

    return fault_preemption.apiserver_restart(context)


# name -> scene; the CLI's `box scene NAME` choices, in this order.
SCENES: dict[str, Callable[[SceneContext], SceneResult]] = {
    "day-in-the-life": _day_in_the_life,
    "gang-placement": _gang_placement,
    "bad-node": _bad_node,
    "inference-scales": _inference_scales,
    "immutable-change": _immutable_change,
    "first-sync": _first_sync,
    "no-drift": _no_drift,
    "pull-request": _pull_request,
    "replace-and-prune": _replace_and_prune,
    "prometheus-down": _prometheus_down,
    "gate-leader-killed": _gate_leader_killed,
    "quarantine-storm": _quarantine_storm,
    "provider-down": _provider_down,
    "kueue-restart": _kueue_restart,
    "apiserver-restart": _apiserver_restart,
}
