"""Scene first-sync: the real Argo CD v3.5.1 deploys the environment onto a cluster holding
only the charts' installs (Kueue, the monitoring stack's CRDs), in its own waves with its own
health checks, and ends Synced and Healthy without a failed operation.

The sync is `box up ENV --argocd`'s own (box/argocd_up.py): the box applies the bootstrap
as docs/adopting.md says and records what Argo CD reports about the environment Application
at every read (argocd/first-sync.jsonl). The scene reads back only what Argo CD and the
cluster report:
- the Application's sync status and health now, the objects it manages (status.resources),
  its first operation as recorded (phase, retries, message) and the Events Argo CD wrote
  about it (a failed operation is a Warning `OperationCompleted`;
  a failed attempt that is retried shows as a retry count, controller/appcontroller.go
  1620-1631 of v3.5.1);
- per sync wave (the annotation on the live objects), when the cluster created its objects:
  every object of a wave created no earlier than every object of the wave before;
- from the recording, each object Argo CD reported OutOfSync or Missing for more than a
  minute after its wave began, or Degraded or Progressing for more than a minute at all.
Any of these broken: exit 1. The scene changes nothing, so it may run on a box any other
Argo CD scene runs on.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from dataclasses import dataclass, field

from box import argocd
from box.argocd_up import Deployed, first_sync_path
from box.kube import Kube, Obj
from box.manifests import SYNC_WAVE
from box.scenes.context import SceneContext

LINGER_SECONDS = 60.0
WAITING_SYNC = {"OutOfSync"}  # before its wave, an object is expected to be these
WAITING_HEALTH = {"Missing"}
BAD_HEALTH = {"Degraded", "Progressing"}


@dataclass
class FirstSync:
    application: str
    sync: str
    health: str
    phase: str
    retries: int
    message: str
    seconds: float  # from the bootstrap applied to the Application settled
    failed_events: list[str] = field(default_factory=list)
    applied: int = 0  # objects the Application manages
    waves: list[str] = field(default_factory=list)
    out_of_order: list[str] = field(default_factory=list)
    existed_before: list[str] = field(default_factory=list)
    lingering: list[str] = field(default_factory=list)
    transitions: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            self.sync == "Synced"
            and self.health == "Healthy"
            and self.phase == "Succeeded"
            and self.retries == 0
            and not self.failed_events
            and self.applied > 0
            and not self.out_of_order
            and not self.lingering
        )

    def lines(self) -> list[str]:
        return [
            f"application {self.application}: sync {self.sync}, health {self.health}; first operation "
            f"{self.phase}, {self.retries} retries: {self.message}",
            f"first sync took {self.seconds:.0f}s; {self.applied} objects managed",
            *(f"timeline: {line}" for line in self.transitions),
            *(f"wave {line}" for line in self.waves),
            *(f"existed before the sync (adopted, not created): {name}" for name in self.existed_before),
            *(f"OUT OF ORDER: {line}" for line in self.out_of_order),
            *(f"FAILED OPERATION: {line}" for line in self.failed_events),
            *(f"LINGERED: {line}" for line in self.lingering),
            "OK" if self.ok else "BROKEN",
        ]


def _epoch(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _live(kube: Kube, resource: dict[str, str]) -> Obj | None:
    group = resource.get("group") or ""
    api_version = f"{group}/{resource['version']}" if group else resource["version"]
    return kube.get(api_version, resource["kind"], resource["name"], resource.get("namespace") or None)


def failed_operations(kube: Kube, namespace: str, name: str) -> list[str]:
    """Argo CD's Warning OperationCompleted Events about the Application (a failed sync)."""
    return [
        f"{event.get('lastTimestamp') or event.get('eventTime')}: {event.get('message')}"
        for event in kube.list("v1", "Event", namespace)
        if (event.get("involvedObject") or {}).get("name") == name
        and (event.get("involvedObject") or {}).get("kind") == "Application"
        and event.get("reason") == "OperationCompleted"
        and event.get("type") == "Warning"
    ]


def wave_order(
    kube: Kube, result: list[dict[str, str]], started: float
) -> tuple[list[str], list[str], list[str], dict[str, float]]:
    """Per wave, the cluster's creation times of the objects the operation applied: lines,
    violations, objects that existed before the operation, and each object's wave start."""
    created: dict[int, list[tuple[float, str]]] = defaultdict(list)
    before = []
    wave_of: dict[str, int] = {}
    for resource in result:
        live = _live(kube, resource)
        name = argocd.resource_name(resource)
        if live is None:
            continue
        meta = live["metadata"]
        wave = int((meta.get("annotations") or {}).get(SYNC_WAVE, "0"))
        when = _epoch(meta["creationTimestamp"])
        if when < started - 1:  # creationTimestamp has whole seconds
            before.append(name)
            continue
        created[wave].append((when, name))
        wave_of[name] = wave
    lines, violations = [], []
    previous: tuple[int, float, str] | None = None
    starts: dict[int, float] = {}
    for wave in sorted(created):
        times = sorted(created[wave])
        first, last = times[0], times[-1]
        starts[wave] = first[0]
        lines.append(
            f"{wave}: {len(times)} objects created {_clock(first[0])} to {_clock(last[0])} "
            f"(+{first[0] - started:.0f}s to +{last[0] - started:.0f}s)"
        )
        if previous is not None and first[0] < previous[1]:
            violations.append(
                f"wave {wave}'s {first[1]} created at {_clock(first[0])}, before wave {previous[0]}'s "
                f"{previous[2]} at {_clock(previous[1])}"
            )
        previous = (wave, last[0], last[1])
    return lines, violations, sorted(before), {name: starts[wave] for name, wave in wave_of.items()}


def _clock(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%H:%M:%S")


def lingering(
    records: list[tuple[float, dict[str, list[str]]]], began: float, wave_start: dict[str, float]
) -> tuple[list[str], list[str]]:
    """From the recording: objects in a bad state for more than LINGER_SECONDS (see the
    module docstring), and the Application's own transitions as lines."""
    end = records[-1][0] if records else 0.0
    states: dict[str, list[tuple[float, list[str]]]] = defaultdict(list)
    transitions = []
    for t, changed in records:
        for name, state in changed.items():
            states[name].append((t, state))
            if name == "":
                sync, health, phase, retries, message = state
                operation = f"operation {phase or 'none'} (retries {retries})"
                transitions.append(f"+{t:.0f}s {sync}/{health}, {operation} {message[:160]}")
    found = []
    for name, history in sorted(states.items()):
        if name == "":
            continue
        start = wave_start.get(name, began) - began  # before its wave it waits: expected
        for i, (t, (sync, health, message)) in enumerate(history):
            until = history[i + 1][0] if i + 1 < len(history) else end
            waiting = sync in WAITING_SYNC or health in WAITING_HEALTH
            since = max(t, start) if waiting else t
            if (waiting or health in BAD_HEALTH) and until - since > LINGER_SECONDS:
                what = "/".join(s for s in (sync, health) if s)
                found.append(f"{name} {what} for {until - since:.0f}s from +{since:.0f}s: {message[:200]}")
    return found, transitions


def first_operation(records: list[tuple[float, dict[str, list[str]]]]) -> tuple[float, str, int, str]:
    """From the recording: when the first operation started (seconds), how it ended (phase,
    the most retries it reported, its message). A later operation (selfHeal may start one
    with no task right after) is not the first sync."""
    started, retries = -1.0, 0
    for t, changed in records:
        if "" not in changed:
            continue
        _, _, phase, tries, message = changed[""]
        if phase == "Running" and started < 0:
            started = t
        if started >= 0:
            retries = max(retries, int(tries or 0))
            if phase in argocd.FINISHED:
                return started, phase, retries, message
    return started, "", retries, ""


def first_sync(context: SceneContext) -> FirstSync:
    deployed = Deployed.require(context.folder)
    kube = context.kube
    app = argocd.application(kube, deployed.namespace, deployed.application)
    assert app is not None, f"Application {deployed.namespace}/{deployed.application} is gone"
    began, records = argocd.read_timeline(first_sync_path(context.folder))
    started, phase, retries, message = first_operation(records)
    managed = argocd.resources(app)  # every object Argo CD manages for the Application
    waves, violations, before, wave_start = wave_order(kube, managed, began + max(started, 0.0))
    linger, transitions = lingering(records, began, wave_start)
    context.say(f"read {len(records)} recorded transitions and {len(managed)} managed objects")
    return FirstSync(
        application=f"{deployed.namespace}/{deployed.application}",
        sync=argocd.sync_status(app),
        health=argocd.health_status(app),
        phase=phase,
        retries=retries,
        message=message,
        seconds=deployed.sync_seconds,
        failed_events=failed_operations(kube, deployed.namespace, deployed.application),
        applied=len(managed),
        waves=waves,
        out_of_order=violations,
        existed_before=before,
        lingering=linger,
        transitions=transitions,
    )
