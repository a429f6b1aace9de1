"""Scene no-drift: while the controllers change the cluster, the real Argo CD keeps reporting
the environment Synced, and selfHeal never reverts what a controller changed.

The controllers' work is the day-in-the-life scene's (box/scenes/day_in_the_life.py), run as
is: Kueue admits a gang that borrows the inference pool and preempts inference pods, the HPA
and the scheduler move replicas, the overflow gate opens and closes the virtual node, the
descheduler evicts the spill back. Beside it, the health controller quarantines and releases
a node (`Quarantine`): one GPU of a watched node reads above the temperature limit on the
box's synthetic dcgm-exporter until the controller taints the node, then healthy again until
it removes the taint (the watched pool is not the inference pool the day's gang borrows, so
the two stories do not meet). Meanwhile the scene asks Argo CD for a hard refresh
(`argocd.argoproj.io/refresh: hard`, manifests regenerated and the live state compared
again) every REFRESH_SECONDS and once more when the controllers are done, and after each
one Argo CD finished (its status.reconciledAt moved) records the sync status it reports and
every object it reports OutOfSync.

It reads back only what Argo CD reports: the Application's sync status at each refresh, and
its sync history and last operation, before and after. selfHeal reverts a drift by running a
sync, so "never reverted" is: no operation started while the scene ran (the history and the
operation's start time are unchanged). The controllers' own changes to objects Argo CD
manages (Kueue's finalizers and defaulted fields on the queues and flavors, the HPA's status)
are what a refresh would report OutOfSync; nodes (the gate's and the health controller's
taints), pods, Leases and the user's Deployment are not Argo CD's. At least one refresh must
fall while the node is quarantined.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from box import argocd, dcgm_fake
from box.argocd_up import Deployed
from box.kube import Kube, Obj, wait_for
from box.scenes.bad_node import HEALTH_PROCESS, HOT_ABOVE_LIMIT, SLACK_SECONDS, Exporter, xid_window
from box.scenes.context import SceneContext
from box.scenes.faults import process_url
from generators.model.health import TAINT_KEY

REFRESH_SECONDS = 10.0
REFRESHED_SECONDS = 120.0  # Argo CD finishing one hard refresh on a busy machine


@dataclass
class Refresh:
    at: float  # seconds since the scene began
    sync: str
    out_of_sync: list[str]


@dataclass
class Quarantined:
    """The node the health controller quarantined during the scene, and when (seconds since
    the scene began) its taint appeared and went."""

    node: str = ""
    reason: str = ""
    at: float = 0.0
    released: float = 0.0

    def refreshes(self, refreshes: list[Refresh]) -> list[Refresh]:
        """The refreshes Argo CD finished while the node was quarantined."""
        return [r for r in refreshes if self.at <= r.at <= self.released]

    def line(self, refreshes: list[Refresh]) -> str:
        if not self.at:
            return f"health controller: {self.node or 'no node'} NOT QUARANTINED"
        during = self.refreshes(refreshes)
        released = f"released at +{self.released:.0f}s" if self.released else "NOT RELEASED"
        return (
            f"health controller: {self.node} quarantined ({self.reason}) at +{self.at:.0f}s, {released}; "
            f"{len(during)} refreshes in between: {', '.join(r.sync for r in during) or '-'}"
        )


@dataclass
class NoDrift:
    application: str
    history_before: int
    history_after: int = 0
    operation_before: str = ""  # startedAt of the last operation
    operation_after: str = ""
    refreshes: list[Refresh] = field(default_factory=list)
    quarantine: Quarantined = field(default_factory=Quarantined)
    day_ok: bool = False
    day_lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            self.day_ok
            and len(self.refreshes) >= 3
            and all(r.sync == "Synced" for r in self.refreshes)
            and self.history_after == self.history_before
            and self.operation_after == self.operation_before
            and self.quarantine.released > self.quarantine.at > 0
            and bool(self.quarantine.refreshes(self.refreshes))
            and not self.notes
        )

    def lines(self) -> list[str]:
        return [
            f"application {self.application}: {len(self.refreshes)} hard refreshes while controllers acted",
            *(
                f"refresh +{r.at:.0f}s: {r.sync}"
                + (f"; OutOfSync: {', '.join(r.out_of_sync)}" if r.out_of_sync else "")
                for r in self.refreshes
            ),
            self.quarantine.line(self.refreshes),
            f"sync history {self.history_before} -> {self.history_after} entries; last operation started "
            f"{self.operation_before} -> {self.operation_after}",
            *(f"day-in-the-life: {line}" for line in self.day_lines),
            *(f"NOTE: {note}" for note in self.notes),
            "OK" if self.ok else "BROKEN",
        ]


def _history(app: Obj) -> int:
    return len((app.get("status") or {}).get("history") or [])


def _reconciled(app: Obj | None) -> str:
    return str(((app or {}).get("status") or {}).get("reconciledAt") or "")


class Refresher(threading.Thread):
    """Hard-refreshes the Application every REFRESH_SECONDS with its own client, recording
    what Argo CD reports once each refresh is done, until stopped."""

    def __init__(self, kubeconfig: Path, folder: Path, deployed: Deployed, result: NoDrift) -> None:
        super().__init__(daemon=True)
        self.kube = Kube(kubeconfig, folder / "no-drift-discovery.json")
        self.deployed = deployed
        self.result = result
        self.stopping = threading.Event()
        self.began = time.monotonic()

    def run(self) -> None:
        try:
            while not self.stopping.wait(REFRESH_SECONDS):
                self.refresh_once()
        except Exception as err:  # reported, not raised: the scene's thread decides
            self.result.notes.append(f"refresher: {type(err).__name__}: {err}")
        finally:
            self.kube.close()

    def refresh_once(self) -> None:
        namespace, name = self.deployed.namespace, self.deployed.application
        before = _reconciled(argocd.application(self.kube, namespace, name))
        self.kube.merge_patch(
            argocd.API,
            "Application",
            name,
            {"metadata": {"annotations": {"argocd.argoproj.io/refresh": "hard"}}},
            namespace,
        )
        deadline = time.monotonic() + REFRESHED_SECONDS
        while time.monotonic() < deadline:
            app = argocd.application(self.kube, namespace, name)
            annotations = ((app or {}).get("metadata") or {}).get("annotations") or {}
            # Argo CD removes the annotation when it has refreshed, and stamps reconciledAt.
            if (
                app is not None
                and "argocd.argoproj.io/refresh" not in annotations
                and _reconciled(app) != before
            ):
                out = [
                    argocd.resource_name(r) for r in argocd.resources(app) if r.get("status") == "OutOfSync"
                ]
                self.result.refreshes.append(
                    Refresh(time.monotonic() - self.began, argocd.sync_status(app), out)
                )
                return
            time.sleep(1)
        self.result.notes.append(f"a hard refresh was not done after {REFRESHED_SECONDS:.0f}s")


class Quarantine(threading.Thread):
    """The health controller quarantines a node and releases it, with its own client: the
    last node of the first watched pool gets one GPU HOT_ABOVE_LIMIT degrees above the limit
    until its taint appears, then healthy again until the taint goes (the bad-node scene's
    fault, box/scenes/bad_node.py). At speed 30 staging quarantines after 10 s and releases
    60 s after the fault went."""

    def __init__(self, context: SceneContext, began: float, result: NoDrift) -> None:
        super().__init__(daemon=True)
        health = context.env.health
        controller = health.controller if health else None
        exporter = process_url(context.state, dcgm_fake.NAME)
        if controller is None or exporter is None or not process_url(context.state, HEALTH_PROCESS):
            raise ValueError("the box runs no health controller or dcgm-exporter: nothing to quarantine")
        self.condition = next(c for c in controller.active_conditions if c.spec_key == "gpuTemperature")
        self.hot = context.env.monitoring.gpu_temp_limit_celsius + HOT_ABOVE_LIMIT
        # after an XID (the scenes before may have left one fading) the node stays bad this long
        self.cool = controller.release_after_seconds + xid_window(context.env) + SLACK_SECONDS
        self.exporter = Exporter(exporter)
        self.kube = Kube(Path(context.state.kubeconfig), context.folder / "no-drift-health-discovery.json")
        self.began = began
        self.result = result.quarantine
        self.notes = result.notes
        pool = controller.pools[0]
        selector = ",".join(f"{k}={v}" for k, v in sorted(pool.node_labels.items()))
        self.result.node = sorted(
            n["metadata"]["name"] for n in self.kube.list("v1", "Node", label_selector=selector)
        )[-1]
        self.result.reason = self.condition.reason

    def tainted(self) -> bool:
        node = self.kube.get("v1", "Node", self.result.node) or {}
        return any(t.get("key") == TAINT_KEY for t in (node.get("spec") or {}).get("taints") or [])

    def run(self) -> None:
        node = self.result.node
        try:
            self.exporter.fault(node, gpuTemperature=self.hot)
            wait_for(
                self.tainted,
                self.condition.quarantine_after_seconds + SLACK_SECONDS,
                f"{node} quarantined",
                0.5,
            )
            self.result.at = time.monotonic() - self.began
            self.exporter.heal(node)
            wait_for(lambda: not self.tainted(), self.cool, f"{node} released", 0.5)
            self.result.released = time.monotonic() - self.began
        except Exception as err:  # reported, not raised: the scene's thread decides
            self.notes.append(f"quarantine: {type(err).__name__}: {err}")
        finally:
            self.leave_as_found()

    def leave_as_found(self) -> None:
        """No fault left on the exporter, the node released (the next scene's as-found box)."""
        node = self.result.node
        try:
            self.exporter.heal(node)
            if not self.result.released:
                wait_for(lambda: not self.tainted(), self.cool, f"{node} released after the scene", 0.5)
        except Exception as err:
            self.notes.append(f"quarantine clean-up: {type(err).__name__}: {err}")
        finally:
            self.kube.close()


def no_drift(context: SceneContext) -> NoDrift:
    from box.scenes.day_in_the_life import day_in_the_life

    deployed = Deployed.require(context.folder)
    kube = context.kube
    app = argocd.application(kube, deployed.namespace, deployed.application)
    assert app is not None
    result = NoDrift(
        f"{deployed.namespace}/{deployed.application}",
        history_before=_history(app),
        operation_before=str(argocd.operation_state(app).get("startedAt", "")),
    )
    refresher = Refresher(Path(context.state.kubeconfig), context.folder, deployed, result)
    quarantine = Quarantine(context, refresher.began, result)
    refresher.start()
    quarantine.start()
    try:
        day = day_in_the_life(context)
        result.day_ok, result.day_lines = day.ok, day.lines()
    finally:
        quarantine.join(timeout=quarantine.cool * 2 + SLACK_SECONDS)  # Argo CD refreshes on
        refresher.stopping.set()
        refresher.join(timeout=REFRESHED_SECONDS + 30)
    # One more once every controller is done: what they left is what Argo CD keeps seeing.
    last = Refresher(Path(context.state.kubeconfig), context.folder, deployed, result)
    last.began = refresher.began
    try:
        last.refresh_once()
    finally:
        last.kube.close()
    app = argocd.application(kube, deployed.namespace, deployed.application)
    assert app is not None
    result.history_after = _history(app)
    result.operation_after = str(argocd.operation_state(app).get("startedAt", ""))
    return result
