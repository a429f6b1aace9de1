"""Fault scene provider-down: the provider fails while the gate is open.

The loop first runs as in day-in-the-life (box/scenes/day_in_the_life.py, whose plan and
objects it reuses) up to the spill: the serving Deployment steady on the inference pool, a
training gang borrowing all but one node of it, the gate opening the virtual node and the
displaced replicas running there. Then the provider fails: its virtual node reports
NotReady, as interLink's virtual-kubelet does when its provider stops answering (it keeps
its node and Lease and writes Ready=False, reason InterlinkPingFailed, at each 30 s ping:
interLink 0.6.1 pkg/virtualkubelet/virtualkubelet.go:600-660). On the box KWOK plays that
virtual-kubelet: the scene takes the node's Lease from KWOK (KWOK plays only the nodes whose
Lease it holds, so no Stage of its rewrites the status), renewing it as the virtual-kubelet
does, and writes Ready=False; to end the fault it gives the Lease back to KWOK, whose
node-initialize Stage reports the node Ready, as the virtual-kubelet would on its next good
ping.

From there everything is Kubernetes' own: the node lifecycle controller taints the node
`node.kubernetes.io/not-ready` NoSchedule at once (a node update) and NoExecute at its next
monitor pass (kube-controller-manager's --node-monitor-period, 25 s on kwokctl's box), the
taint eviction controller deletes the spilled pods once their toleration of that taint runs
out, the ReplicaSet controller replaces them, and the scheduler places the replacements
where they fit: nowhere in the cluster while the gang holds the pool, and not on the
NotReady node. The gate does nothing: it does not read node readiness, and needs not, since
the taints Kubernetes puts on a NotReady node refuse new pods whatever the gate's own taint
says, and are lifted when the node is Ready again (docs/overflow.md, "Faults on the whole
loop").

Tolerations: a pod's toleration of not-ready and unreachable is 300 s unless it sets one
(the DefaultTolerationSeconds admission plugin). The scene's Deployment sets it to 300 s
divided by the box's speed, as the box divides every duration of the spec, but at least one
monitor period plus a margin: the NoExecute taint is lifted only at a monitor pass after the
node is Ready again, and a replacement placed there at once must not be evicted meanwhile.

What must hold, sampled every second from the steady state until settled (box/invariants.py,
and the scene's own checks): no pod is placed on the virtual node while it is NotReady; the
spilled pods are evicted by the node lifecycle controller (a recorded cause,
TaintManagerEviction) and replaced; the gate counts no transition; once the node is Ready
again the replacements run on it, the placement reopened by Kubernetes lifting its taints.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import re
import time
from datetime import UTC, datetime
from pathlib import Path

from box.kube import Kube, Obj, is_true
from box.scenes import day_in_the_life as day
from box.scenes.context import SceneContext
from box.scenes.faults import (
    REACT_SECONDS,
    FaultResult,
    Sampler,
    Spill,
    process_url,
    transitions,
)
from box.up import cluster_of

NAME = "provider-down"
GATE_PROCESS = "overflow-gate"
NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300  # kube-apiserver --default-not-ready-toleration-seconds
MARGIN_SECONDS = 5
SETTLE_SECONDS = 3
REASON = "ProviderPingFailed"
LEASES = "kube-node-lease"
HOLDER = "trainyard-box-provider-down"  # the scene, as the virtual-kubelet whose provider failed
BACK = "trainyard.dev/box-provider-back"  # touched to end the fault (KWOK acts on node updates)


def monitor_period(folder: Path, env: str) -> float:
    """kube-controller-manager's --node-monitor-period on this box, read from its command
    line (kwokctl sets it; its own default is 5 s)."""
    cluster = cluster_of(env, folder)
    pid = cluster.component_pids()["kube-controller-manager"]
    argv = (Path("/proc") / str(pid) / "cmdline").read_bytes().decode().split("\0")
    for arg in argv:
        found = re.fullmatch(r"--node-monitor-period=(?:(\d+)m)?(?:([\d.]+)s)?", arg)
        if found:
            return 60 * float(found.group(1) or 0) + float(found.group(2) or 0)
    return 5.0


def toleration_seconds(speed: int, period: float) -> int:
    return max(DEFAULT_TOLERATION_SECONDS // max(speed, 1), math.ceil(period) + MARGIN_SECONDS)


def tolerating(deployment: Obj, seconds: int) -> Obj:
    """`deployment` with its pods tolerating a NotReady or unreachable node for `seconds`."""
    spec = deployment["spec"]["template"]["spec"]
    spec["tolerations"] = [
        *spec.get("tolerations", []),
        *(
            {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
            for key in (NOT_READY, UNREACHABLE)
        ),
    ]
    return deployment


def _ready(kube: Kube, node: str) -> str:
    found = kube.get("v1", "Node", node) or {}
    return next(
        (c.get("status", "") for c in found.get("status", {}).get("conditions", []) if c["type"] == "Ready"),
        "",
    )


def _taints(kube: Kube, node: str) -> set[tuple[str, str]]:
    found = kube.get("v1", "Node", node) or {}
    return {(t["key"], t["effect"]) for t in (found.get("spec") or {}).get("taints") or []}


def report_not_ready(kube: Kube, node: str) -> None:
    """Write Ready=False as a virtual-kubelet whose provider fails its ping does."""
    found = kube.get("v1", "Node", node) or {}
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = []
    for c in found.get("status", {}).get("conditions", []):
        if c["type"] == "Ready":
            changed = c.get("status") != "False"
            c = {
                **c,
                "status": "False",
                "reason": REASON,
                "message": "the provider does not answer",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now if changed else c.get("lastTransitionTime", now),
            }
        conditions.append(c)
    kube.patch_status("v1", "Node", node, {"conditions": conditions})


def _lease(kube: Kube, node: str, holder: str) -> None:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    kube.merge_patch(
        "coordination.k8s.io/v1",
        "Lease",
        node,
        {"spec": {"holderIdentity": holder, "renewTime": now}},
        LEASES,
    )


def provider_fails(kube: Kube, node: str) -> str:
    """Take the node from KWOK and report it NotReady; returns KWOK's holder identity.

    KWOK plays a node only while it holds the node's Lease (sigs.k8s.io/kwok v0.8.0,
    pkg/kwok/controllers/controller.go:288-291, node_lease_controller.go:169-176); another
    holder's unexpired Lease makes it skip the node, retrying every renew interval. The
    scene holds it as the virtual-kubelet would: renewed (a heartbeat), so the node lifecycle
    controller reads Ready=False, not Unknown."""
    lease = kube.get("coordination.k8s.io/v1", "Lease", node, LEASES) or {}
    kwok = str(lease.get("spec", {}).get("holderIdentity", ""))
    _lease(kube, node, HOLDER)
    report_not_ready(kube, node)
    return kwok


def provider_back(kube: Kube, node: str, kwok: str) -> list[str]:
    """The provider answers again: the virtual-kubelet completes the deletions it could not
    while its provider was down (the evicted pods, Terminating on the node since), and
    reports Ready. The scene deletes those pods as it would, gives the Lease back to KWOK
    and touches the node: KWOK, holding it again, sees the update and plays its
    node-initialize Stage (Ready not True), which reports Ready. (KWOK itself finalizes the
    node's pods only when it takes a Lease over, at its next renew interval: 50 s on the
    box, during which the Terminating pods would hold the node's GPUs.) Returns the pods
    it deleted."""
    finished = [
        x["metadata"]["name"]
        for x in kube.list("v1", "Pod")
        if x["spec"].get("nodeName") == node and x["metadata"].get("deletionTimestamp")
    ]
    for x in kube.list("v1", "Pod"):
        if x["metadata"]["name"] in finished:
            kube.delete("v1", "Pod", x["metadata"]["name"], x["metadata"]["namespace"])
    _lease(kube, node, kwok)
    for value in (datetime.now(UTC).isoformat(), None):  # two updates; the node left as it was
        kube.merge_patch("v1", "Node", node, {"metadata": {"annotations": {BACK: value}}})
    return finished


def provider_down(context: SceneContext) -> FaultResult:
    """Run the scene (module docstring); give the node back and remove what it created,
    whatever happened."""
    env, kube, state = context.env, context.kube, context.state
    p = dataclasses.replace(day.plan(env), run_seconds=3600)
    result = FaultResult(NAME)
    gate_url = process_url(state, GATE_PROCESS)
    if gate_url is None:
        result.problems.append("the box runs no gate: nothing to fault")
        return result
    node = p.provider.node_name
    sampler = Sampler(context, result, [p.service.namespace, p.namespace], lambda: gate_url)
    loop = Spill(context, sampler, p)
    period = monitor_period(context.folder, env.name)
    seconds = toleration_seconds(state.speed, period)
    tolerating(loop.deployment, seconds)
    kwok = ""
    try:
        with sampler.recording():
            loop.steady()
            sampler.step(
                f"steady: {p.replicas} replicas of {p.service.deployment} Ready on {p.pool.name}, tolerating "
                f"a NotReady node for {seconds}s (300s / speed {state.speed}, at least the node "
                f"monitor period {period:g}s + {MARGIN_SECONDS}s); {node} closed"
            )
            result.timings["spill"] = loop.spill()
            spilled = _pods_on(kube, p, node)
            opened, closed = transitions(gate_url, p.provider.name)
            sampler.step(f"spilled: {len(spilled)} replicas Running on {node}, the gate open")

            kwok = provider_fails(kube, node)
            fault = sampler.now()
            sampler.step(
                f"FAULT: the provider fails: {node} reports Ready=False ({REASON}), still heartbeating"
            )

            def checked() -> None:
                """What must hold at every poll while the node is down."""
                if _ready(kube, node) != "False":  # a KWOK heartbeat queued before the fault
                    report_not_ready(kube, node)
                    sampler.step(f"{node} read Ready again while down; reported NotReady again")
                placed = sorted(set(_pods_on(kube, p, node)) - set(spilled))
                if placed:
                    raise AssertionError(f"placed on {node} while NotReady: {', '.join(placed)}")
                if transitions(gate_url, p.provider.name) != (opened, closed):
                    raise AssertionError("the gate counted a transition while the provider was down")

            def tainted(effect: str) -> bool:
                checked()
                return (NOT_READY, effect) in _taints(kube, node)

            sampler.until(lambda: tainted("NoSchedule"), REACT_SECONDS, f"{NOT_READY}:NoSchedule on {node}")
            result.timings["NoSchedule taint"] = sampler.now() - fault
            sampler.until(lambda: tainted("NoExecute"), REACT_SECONDS, f"{NOT_READY}:NoExecute on {node}")
            result.timings["NoExecute taint"] = sampler.now() - fault
            sampler.step(
                f"{node} tainted {NOT_READY} NoSchedule +{result.timings['NoSchedule taint']:.1f}s and "
                f"NoExecute +{result.timings['NoExecute taint']:.1f}s after the fault "
                "(node lifecycle controller)"
            )

            def replaced() -> bool:
                checked()
                left = set(_pods_on(kube, p, node)) & set(spilled)  # evicted: gone or terminating
                pending = _pending(kube, p)
                return (
                    not left
                    and len(pending) == len(spilled)
                    and loop.serving()[1] == p.replicas - len(spilled)
                )

            sampler.until(
                replaced, REACT_SECONDS + seconds, f"the {len(spilled)} spilled replicas evicted and replaced"
            )
            result.timings["evicted and replaced"] = sampler.now() - fault
            sampler.step(
                f"the {len(spilled)} spilled replicas evicted (taint eviction after {seconds}s) and replaced "
                f"+{result.timings['evicted and replaced']:.1f}s after the fault: {len(spilled)} "
                f"replacements Pending (the gang holds {p.pool.name}; {node} refuses them), the gate "
                "still open, no transition"
            )

            finished = provider_back(kube, node, kwok)
            kwok = ""
            back = sampler.now()
            sampler.step(
                f"the provider answers again: its virtual-kubelet completes the {len(finished)} evicted "
                f"pods' deletion and reports {node} Ready"
            )
            sampler.until(
                lambda: _ready(kube, node) == "True" and (NOT_READY, "NoSchedule") not in _taints(kube, node),
                REACT_SECONDS,
                f"{node} Ready and its NoSchedule taint lifted",
            )
            result.timings["Ready again"] = sampler.now() - back
            sampler.until(
                lambda: loop.serving() == (p.replicas, p.replicas - len(spilled), len(spilled)),
                REACT_SECONDS,
                f"{len(spilled)} replicas Running on {node} again",
            )
            result.timings["replicas back on the provider"] = sampler.now() - back
            sampler.step(
                f"{node} Ready +{result.timings['Ready again']:.1f}s after the provider answered; the "
                f"{len(spilled)} replacements Running there "
                f"+{result.timings['replicas back on the provider']:.1f}s; the gate counted no transition"
            )
            if transitions(gate_url, p.provider.name) != (opened, closed):
                sampler.problem("the gate counted a transition while its provider failed and came back")
            # The training ends now, so the gate's close hold runs while the scene settles: the
            # next scene starts from a closed gate (the clean-up waits for it).
            ended = loop.end_training()
            sampler.hold(SETTLE_SECONDS, lambda: None)  # the evictions' events landed long before
            sampler.sample(final=True)
            sampler.step(f"the training ended ({ended} pods); every ended pod with a recorded cause")
    finally:
        if kwok:
            with contextlib.suppress(Exception):
                provider_back(kube, node, kwok)
        loop.remove()
        deadline = time.monotonic() + REACT_SECONDS
        while not loop.closed() and time.monotonic() < deadline:  # leave the box as found
            time.sleep(1)
    return result


def _pods_on(kube: Kube, p: day.Plan, node: str) -> list[str]:
    """The service's pods bound to `node`, not being deleted."""
    selector = ",".join(f"{k}={v}" for k, v in sorted(p.service.pod_selector.items()))
    return [
        x["metadata"]["name"]
        for x in kube.list("v1", "Pod", p.service.namespace, label_selector=selector)
        if x["spec"].get("nodeName") == node and not x["metadata"].get("deletionTimestamp")
    ]


def _pending(kube: Kube, p: day.Plan) -> list[str]:
    """The service's pods bound nowhere (the scheduler found no node for them)."""
    selector = ",".join(f"{k}={v}" for k, v in sorted(p.service.pod_selector.items()))
    return [
        x["metadata"]["name"]
        for x in kube.list("v1", "Pod", p.service.namespace, label_selector=selector)
        if not x["spec"].get("nodeName")
        and not x["metadata"].get("deletionTimestamp")
        and not is_true(x, "PodScheduled")
    ]
