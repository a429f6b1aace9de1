"""Scene bad-node: a GPU node goes bad under a running training workload.

docs/health.md promises: a node bad on a condition's query for its `quarantineAfterSeconds`
gets the NoSchedule taint `trainyard.dev/gpu-health=<reason>` and two annotations; no new
training pod lands there; running pods are not evicted (never NoExecute); the node comes back
`releaseAfterSeconds` after its signal went; and in a fleet-wide spike at most the cap's
number of nodes are quarantined. The scene writes only what the world writes: training pods
across the watched pool, and the DCGM readings of the box's synthetic exporter
(box/dcgm_fake.py). Everything it reports was done by the real controllers: the
health controller (gate/trainyard_gate, the rendered NodeHealthPolicy, as ServiceAccount
gpu-health) reading the box's Prometheus, Kueue's topology-aware admission and
kube-scheduler placing pods, the descheduler (evicting) and the node lifecycle controller
leaving them alone.

The running training is a Job through the team's topology queue (3 pods of half a node,
placed by Kueue and the scheduler), held Running by the box's KWOK `pod-complete` Stage for its
`trainyard.dev/box-run-for` annotation. On a box whose KWOK completes Job pods at once (no such
Stage in its configuration) the scene falls back to a class-less Deployment's pods in the same
namespace (the rendered policy gives them the outside-Kueue tier) and says so. The bad node is
one holding a single trainer, so half of it is free. What must not land there is a second
training Job through the queue, pinned to the node (`kubernetes.io/hostname`), half a node
big: while the node is quarantined it must not run there; once released it must (which
shows it was the taint).

Durations are the environment's as the box rendered it: run on a box brought up with
`--speed X` to see a release in minutes (staging at --speed 30: quarantine after 10 s, release
after 60 s).
"""

from __future__ import annotations

import contextlib
import json
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from box import dcgm_fake
from box.cluster import Cluster
from box.kube import Kube, Obj, is_true, wait_for
from box.nodes import HOSTNAME
from box.scenes import workloads
from generators.model.environment import Environment
from generators.model.health import REASON_ANNOTATION, SINCE_ANNOTATION, TAINT_KEY, Condition, Controller
from generators.model.types import Pool

HEALTH_PROCESS = "gpu-health"  # the rendered Deployment's name: the box's process name
TRAINERS = 3  # training pods of half a node: on two nodes or three, one node keeps room for a fourth
RUN_FOR_VALUE = "1h"  # longer than the scene; it deletes the Job when done
SLACK_SECONDS = 120  # each reaction beyond the spec's own durations, on 2 busy cores
HOT_ABOVE_LIMIT = 7  # degrees above gpuTempLimitCelsius the bad GPU reads
QUARANTINED = "trainyard_health_quarantined"
SPIKE_XID = 79  # "fallen off the bus": in every environment's xidReplaceCodes by default
Say = Callable[[str], None]


@dataclass
class BadNode:
    pool: str
    reason: str
    quarantine_after: int
    release_after: int
    pool_cap: int
    fleet_cap: int
    node: str = ""
    trainers: list[str] = field(default_factory=list)  # the nodes of the running training pods
    trainers_kind: str = ""  # what runs them: a queued training Job, or (fallback) a Deployment
    seconds_to_quarantine: float = 0.0
    since_after_duration: bool = False  # the `since` annotation is at least the duration after the fault
    taint: str = ""
    reasons_annotation: str = ""
    metric_quarantined: float = 0.0  # trainyard_health_quarantined{node,pool,reason}
    alert: str = ""  # the condition's alert (the same query, for: = the duration)
    seconds_to_alert: float = 0.0  # from the fault to that alert firing for the node in Prometheus
    kept_running: bool = False  # the training pods on the bad node, same UIDs, still Running
    pinned_refused: str = ""  # why the pinned training Job did not run there (Kueue's message)
    pinned_pods_on_node_while_bad: int = 0
    seconds_to_release: float = 0.0
    released_clean: bool = False  # taint and both annotations gone
    pinned_landed_after_release: bool = False
    seconds_to_land: float = 0.0  # from the release seen to the pinned Job's pod bound there
    kept_running_after_release: bool = False
    spike_bad: int = 0
    spike_quarantined: int = 0
    spike_held_back: float = 0.0  # trainyard_health_held_back{pool}
    spike_reason: str = ""
    spike_expected: str = ""  # oldest bad first, ties by name: the first of the spike's nodes
    spike_taints: dict[str, str] = field(default_factory=dict)  # node -> taint value
    spike_alert: str = ""
    spike_alerted: list[str] = field(default_factory=list)  # nodes the XID alert fires for
    notes: list[str] = field(default_factory=list)

    @property
    def cap(self) -> int:
        return min(self.pool_cap, self.fleet_cap)

    @property
    def ok(self) -> bool:
        return (
            self.since_after_duration
            and self.taint == self.reason
            and self.kept_running
            and self.metric_quarantined == 1
            and self.seconds_to_alert > 0
            and self.pinned_pods_on_node_while_bad == 0
            and self.seconds_to_release >= self.release_after
            and self.released_clean
            and self.pinned_landed_after_release
            and self.kept_running_after_release
            and self.spike_ok
        )

    @property
    def spike_ok(self) -> bool:
        return (
            self.spike_quarantined == self.cap
            and self.spike_held_back == self.spike_bad - self.cap
            and self.spike_taints == {self.spike_expected: self.spike_reason}
        )

    def lines(self) -> list[str]:
        def mark(good: bool, bad: str) -> str:
            return "  OK" if good else f"  {bad}"

        return [
            f"pool {self.pool}: {self.trainers_kind} running on {', '.join(self.trainers)}",
            f"{self.node}: a GPU at the limit + {HOT_ABOVE_LIMIT} C; quarantined after "
            f"{self.seconds_to_quarantine:.1f}s ({self.reason} quarantineAfterSeconds "
            f"{self.quarantine_after})"
            + mark(self.since_after_duration and self.taint == self.reason, "NOT AS SPECIFIED"),
            f"  taint {TAINT_KEY}={self.taint}, {REASON_ANNOTATION}={self.reasons_annotation}, "
            f"controller metric quarantined={self.metric_quarantined:g}",
            f"  alert {self.alert} firing for it after {self.seconds_to_alert:.1f}s"
            + mark(self.seconds_to_alert > 0, "NO ALERT"),
            f"  training pods on it kept running: {self.kept_running}" + mark(self.kept_running, "EVICTED"),
            f"  a training Job pinned to it: {self.pinned_pods_on_node_while_bad} pod(s) there; "
            f"Kueue: {self.pinned_refused or '-'}"
            + mark(self.pinned_pods_on_node_while_bad == 0, "LANDED ON A QUARANTINED NODE"),
            f"healthy again: released after {self.seconds_to_release:.1f}s (releaseAfterSeconds "
            f"{self.release_after})"
            + mark(
                self.seconds_to_release >= self.release_after and self.released_clean,
                "RELEASED EARLY OR NOT CLEAN",
            ),
            f"  the pinned Job then ran on it: {self.pinned_landed_after_release} "
            f"({self.seconds_to_land:.1f}s after the release); training pods still "
            f"running: {self.kept_running_after_release}"
            + mark(self.pinned_landed_after_release and self.kept_running_after_release, "NOT BACK"),
            f"spike ({self.spike_reason}): {self.spike_bad} nodes bad, {self.spike_quarantined} quarantined, "
            f"held back {self.spike_held_back:g} (cap: pool {self.pool_cap}, fleet {self.fleet_cap}); "
            f"quarantined: {', '.join(f'{n}={v}' for n, v in sorted(self.spike_taints.items())) or '-'}"
            + mark(self.spike_ok, "CAP BROKEN"),
            f"  alert {self.spike_alert} firing for {len(self.spike_alerted)} node(s): "
            f"{', '.join(self.spike_alerted) or '-'} (the cap, not the alert, picks who goes)",
            *self.notes,
        ]


class Exporter:
    """The box's synthetic dcgm-exporter, driven over its fault API."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _call(self, method: str, path: str, body: Obj | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()

    def fault(self, node: str, **fault: int) -> None:
        self._call("PUT", f"/faults/{node}", fault)

    def heal(self, node: str | None = None) -> None:
        self._call("DELETE", f"/faults/{node}" if node else "/faults")


def health_metrics(url: str) -> dict[str, float]:
    """The controller's trainyard_health_* samples, keyed `name{label="value",...}` (labels sorted)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        text = response.read().decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("trainyard_health_"):
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
                found[f"{sample.name}{{{labels}}}" if labels else sample.name] = float(sample.value)
    return found


def _process_url(context_processes: list[Any], name: str) -> str:
    for process in context_processes:
        if process.name == name:
            return f"http://127.0.0.1:{process.ports[0]}"
    raise ValueError(
        f"the box runs no {name} process: bring it up with this project's box up "
        f"(its health section must name backend trainyard)"
    )


def _watched_pool(env: Environment, controller: Controller) -> tuple[Pool, str, str]:
    """The first watched pool a team's topology queue uses, that namespace and LocalQueue."""
    watched = {pool.name for pool in controller.pools}
    for queue in env.cluster_queues:
        for flavor in queue.flavors:
            if flavor.pool in watched:
                team = next(t for t in env.teams if t.name == queue.team)
                return env.pool(flavor.pool), team.namespaces[0], queue.name
    raise ValueError(f"{env.name}: no team queue uses a pool the health controller watches")


def _condition(controller: Controller, spec_key: str) -> Condition:
    for condition in controller.active_conditions:
        if condition.spec_key == spec_key:
            return condition
    raise ValueError(f"health.conditions.{spec_key} is disabled: the scene needs it")


def _pod_spec(pool: Pool, share: int) -> Obj:
    """Half a node (`share` 2) of the pool, with its node labels and tolerations."""
    container = workloads.gpu_container(pool, workloads.TRAINER_IMAGE, pool.gpus_per_node // share)
    return {
        "tolerations": workloads.pool_tolerations(pool),
        "nodeSelector": dict(pool.node_labels),
        "containers": [container],
    }


def _deployment(name: str, namespace: str, pool: Pool) -> Obj:
    """The fallback for a box whose KWOK completes Job pods at once: class-less pods (the
    rendered policy gives them the outside-Kueue tier), one per node, half a node each."""
    labels = {workloads.SCENE_LABEL: name}
    spec = _pod_spec(pool, 2)
    spec["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": HOSTNAME}
            ]
        }
    }
    template = {"metadata": {"labels": labels}, "spec": spec}
    return workloads.scene_object(
        "apps/v1",
        "Deployment",
        name,
        namespace,
        {"replicas": TRAINERS, "selector": {"matchLabels": labels}, "template": template},
    )


def _job(
    name: str, namespace: str, queue: str, pool: Pool, tier: str, pods: int, node: str | None = None
) -> Obj:
    """A training Job through the team's queue: `pods` pods of half a node, held Running by
    the box's pod-complete Stage for RUN_FOR_VALUE; pinned to `node` if given."""
    spec = _pod_spec(pool, 2)
    if node:
        spec["nodeSelector"] = {**spec["nodeSelector"], HOSTNAME: node}
    return workloads.training_job(name, namespace, queue, tier, pods, spec, run_for=RUN_FOR_VALUE)


def holds_job_pods(folder: Path, cluster: str) -> bool:
    """Whether the box's KWOK holds a Job pod Running for its RUN_FOR annotation: its Stages
    (the kwok-controller's configuration kwokctl wrote) read the annotation."""
    config = Cluster(cluster, folder / "kwok").folder / "kwok.yaml"
    return config.is_file() and workloads.RUN_FOR in config.read_text(encoding="utf-8")


def _taint(node: Obj | None) -> str | None:
    """The value of the quarantine taint on `node` (None: not quarantined)."""
    for taint in ((node or {}).get("spec") or {}).get("taints") or []:
        if taint.get("key") == TAINT_KEY and taint.get("effect") == "NoSchedule":
            return str(taint.get("value") or "")
    return None


def _quarantined(kube: Kube, pool: Pool) -> list[str]:
    nodes = kube.list("v1", "Node", label_selector=f"trainyard.dev/pool={pool.name}")
    return sorted(n["metadata"]["name"] for n in nodes if _taint(n) is not None)


def _running(kube: Kube, namespace: str, selector: str) -> dict[str, tuple[str, str]]:
    """uid -> (node, phase) of the pods matching `selector`."""
    return {
        p["metadata"]["uid"]: (p["spec"].get("nodeName", ""), (p.get("status") or {}).get("phase", ""))
        for p in kube.list("v1", "Pod", namespace, label_selector=selector)
    }


def _passes_after(metrics_url: str, moment: float, passes: int, timeout: float) -> None:
    """Until the controller finished `passes` successful passes that began after `moment`."""
    seen: set[float] = set()

    def done() -> bool:
        stamp = health_metrics(metrics_url).get("trainyard_health_last_success_timestamp_seconds", 0.0)
        if stamp > moment:
            seen.add(stamp)
        return len(seen) >= passes

    wait_for(done, timeout, f"{passes} health controller passes", 0.5)


def firing(prometheus: str, alert: str) -> list[str]:
    """The nodes `alert` fires for in Prometheus now (its rendered rules, evaluated there)."""
    with urllib.request.urlopen(f"{prometheus}/api/v1/alerts", timeout=10) as response:
        alerts = json.load(response)["data"]["alerts"]
    return sorted(
        a["labels"].get("node", "")
        for a in alerts
        if a["labels"].get("alertname") == alert and a.get("state") == "firing"
    )


@dataclass
class _Run:
    """What every step of one run of the scene reads: the box, the watched pool and its queue,
    the synthetic exporter, the objects created so far (deleted at the end) and the result."""

    kube: Kube
    env: Environment
    controller: Controller
    prometheus: str
    exporter: Exporter
    metrics_url: str
    pool: Pool
    namespace: str
    queue: str
    tier: str
    tag: str  # a fresh suffix for this run's object names
    result: BadNode
    say: Say
    created: list[tuple[str, str, str]] = field(default_factory=list)

    def create(self, obj: Obj) -> Obj:
        made = self.kube.create(obj)
        self.created.append((obj["apiVersion"], obj["kind"], made["metadata"]["name"]))
        return made


def bad_node(
    kube: Kube, env: Environment, processes: list[Any], prometheus: str, folder: Path, cluster: str, say: Say
) -> BadNode:
    """Run the scene (module docstring); remove what it created and heal every node after."""
    assert env.health is not None and env.health.controller is not None, "backend trainyard only"
    controller = env.health.controller
    pool, namespace, queue = _watched_pool(env, controller)
    temperature = _condition(controller, "gpuTemperature")
    result = BadNode(
        pool.name,
        temperature.reason,
        temperature.quarantine_after_seconds,
        controller.release_after_seconds,
        controller.cap.pool_cap(pool),
        controller.cap.max_nodes,
    )
    run = _Run(
        kube,
        env,
        controller,
        prometheus,
        Exporter(_process_url(processes, dcgm_fake.NAME)),
        _process_url(processes, HEALTH_PROCESS),
        pool,
        namespace,
        queue,
        env.default_training_tier.name,
        uuid.uuid4().hex[:6],
        result,
        say,
    )
    cool = controller.release_after_seconds + xid_window(env) + SLACK_SECONDS
    try:
        run.exporter.heal()
        wait_for(lambda: not _quarantined(kube, pool), cool, f"no node of {pool.name} quarantined before")
        selector, on_node = _start_trainers(run, holds_job_pods(folder, cluster))
        job = _go_bad(run, temperature, selector, on_node)
        _heal(run, job, selector, on_node)
        _spike(run, _condition(controller, "xid"))
        return result
    finally:
        with contextlib.suppress(Exception):
            run.exporter.heal()
        for api_version, kind, name in reversed(run.created):
            kube.delete(api_version, kind, name, namespace)
        say(f"healing: waiting for the controller to release every node of {pool.name}")
        wait_for(lambda: not _quarantined(kube, pool), cool, f"every node of {pool.name} released")


def _start_trainers(run: _Run, job_pods_held: bool) -> tuple[str, set[str]]:
    """The running training, on two or three nodes; picks the bad node (one holding a single
    trainer, so half of it is free). Returns the trainers' selector and their UIDs on it."""
    result, name = run.result, f"trainer-{run.tag}"
    if job_pods_held:
        run.create(_job(name, run.namespace, run.queue, run.pool, run.tier, TRAINERS))
        result.trainers_kind = f"a training Job through queue {run.queue} ({TRAINERS} pods of half a node)"
    else:
        run.create(_deployment(name, run.namespace, run.pool))
        result.trainers_kind = (
            f"{TRAINERS} class-less Deployment pods (this box's KWOK completes "
            f"Job pods at once: no {workloads.RUN_FOR} Stage)"
        )
    selector = f"{workloads.SCENE_LABEL}={name}"

    def all_running() -> dict[str, tuple[str, str]] | None:
        pods = _running(run.kube, run.namespace, selector)
        ok = len(pods) == TRAINERS and all(node and phase == "Running" for node, phase in pods.values())
        return pods if ok else None

    before = wait_for(all_running, SLACK_SECONDS, f"{TRAINERS} training pods running")
    result.trainers = sorted(node for node, _ in before.values())
    # a node with one trainer: half of it is free, for the pinned Job of _go_bad
    result.node = node = next(n for n in result.trainers if result.trainers.count(n) == 1)
    run.say(f"training pods on {', '.join(result.trainers)}; {node} goes bad")
    return selector, {uid for uid, (where, _) in before.items() if where == node}


def _go_bad(run: _Run, temperature: Condition, selector: str, on_node: set[str]) -> Obj:
    """Steps 1 and 2: one GPU above the limit gets its node quarantined once bad for
    quarantineAfterSeconds; a training Job pinned to it does not run there while the training
    pods stay. Returns the pinned Job."""
    kube, result, node = run.kube, run.result, run.result.node
    hot = run.env.monitoring.gpu_temp_limit_celsius + HOT_ABOVE_LIMIT
    began = time.time()
    run.exporter.fault(node, gpuTemperature=hot)
    quarantined = wait_for(
        lambda: _with_taint(kube, node),
        temperature.quarantine_after_seconds + SLACK_SECONDS,
        f"{node} quarantined",
    )
    result.seconds_to_quarantine = time.time() - began
    result.taint = _taint(quarantined) or ""
    notes = quarantined["metadata"].get("annotations") or {}
    result.reasons_annotation = notes.get(REASON_ANNOTATION, "")
    since = datetime.fromisoformat(notes.get(SINCE_ANNOTATION, "1970-01-01T00:00:00+00:00")).timestamp()
    # the annotation has whole seconds: allow the one it truncates
    result.since_after_duration = since >= int(began) + temperature.quarantine_after_seconds - 1
    key = f'{QUARANTINED}{{node="{node}",pool="{run.pool.name}",reason="{temperature.reason}"}}'
    result.metric_quarantined = health_metrics(run.metrics_url).get(key, 0.0)
    run.say(f"{node} quarantined after {result.seconds_to_quarantine:.1f}s")
    result.alert = temperature.alert
    wait_for(
        lambda: node in firing(run.prometheus, temperature.alert),
        SLACK_SECONDS,
        f"{temperature.alert} firing for {node}",
        0.5,
    )
    result.seconds_to_alert = time.time() - began

    job = run.create(_job(f"pinned-{run.tag}", run.namespace, run.queue, run.pool, run.tier, 1, node))
    result.pinned_refused = wait_for(
        lambda: _refusal(kube, job), SLACK_SECONDS, "Kueue's verdict on the pinned Job"
    )
    _passes_after(run.metrics_url, time.time(), 2, SLACK_SECONDS)  # the controller and friends had their go
    result.pinned_pods_on_node_while_bad = len(_pods_on(kube, job, node))
    result.kept_running = _kept(kube, run.namespace, selector, on_node, node)
    return job


def _heal(run: _Run, job: Obj, selector: str, on_node: set[str]) -> None:
    """Step 3: healthy again, the node is released once good for releaseAfterSeconds, clean,
    and the pinned Job's pod lands there (which shows it was the taint that kept it off)."""
    kube, result, node = run.kube, run.result, run.result.node
    healed = time.time()
    run.exporter.heal(node)
    wait_for(
        lambda: _without_taint(kube, node),
        run.controller.release_after_seconds + SLACK_SECONDS,
        f"{node} released",
    )
    result.seconds_to_release = time.time() - healed
    released = kube.get("v1", "Node", node) or {}
    left = set(released["metadata"].get("annotations") or {}) & {REASON_ANNOTATION, SINCE_ANNOTATION}
    result.released_clean = _taint(released) is None and not left
    run.say(f"{node} released after {result.seconds_to_release:.1f}s")
    released_at = time.time()
    landed = wait_for(
        lambda: _pods_on(kube, job, node) or None,
        SLACK_SECONDS,
        "the pinned Job's pod on the released node",
        0.5,
    )
    result.pinned_landed_after_release = bool(landed)
    result.seconds_to_land = time.time() - released_at
    result.kept_running_after_release = _kept(kube, run.namespace, selector, on_node, node)


def _spike(run: _Run, xid: Condition) -> None:
    """Step 4: a fleet-wide spike, more nodes bad than the cap allows: the cap holds, and keeps
    holding over two more passes (not a race won once); the XID alert fires for every one."""
    kube, result, pool = run.kube, run.result, run.pool
    pool_nodes = kube.list("v1", "Node", label_selector=f"trainyard.dev/pool={pool.name}")
    spike = sorted(n["metadata"]["name"] for n in pool_nodes)[: result.cap + 2]
    result.spike_bad, result.spike_reason = len(spike), xid.reason
    for name in spike:
        run.exporter.fault(name, xid=SPIKE_XID)
    held = f'trainyard_health_held_back{{pool="{pool.name}"}}'
    bad_metric = f'trainyard_health_bad_nodes{{reason="{xid.reason}"}}'

    def spiked() -> dict[str, float] | None:
        found = health_metrics(run.metrics_url)
        return found if found.get(bad_metric) == len(spike) and _quarantined(kube, pool) else None

    wait_for(spiked, xid.quarantine_after_seconds + SLACK_SECONDS, "the spike seen and acted on", 0.5)
    _passes_after(run.metrics_url, time.time(), 2, SLACK_SECONDS)
    found = health_metrics(run.metrics_url)
    result.spike_held_back = found.get(held, -1.0)
    tainted = _quarantined(kube, pool)
    result.spike_quarantined, result.spike_expected = len(tainted), spike[0]
    result.spike_taints = {name: _taint(kube.get("v1", "Node", name)) or "" for name in tainted}
    result.spike_alert = xid.alert

    def alerted() -> list[str] | None:
        nodes = firing(run.prometheus, xid.alert)
        return nodes if set(nodes) >= set(spike) else None

    result.spike_alerted = wait_for(alerted, SLACK_SECONDS, f"{xid.alert} firing for the spike", 0.5)
    run.say(
        f"spike: {len(spike)} bad, {result.spike_quarantined} quarantined, "
        f"held back {result.spike_held_back:g}"
    )


def xid_window(env: Environment) -> int:
    """errorWindow in seconds: an XID keeps its node bad that long after it stops."""
    from box.speed import seconds_of

    return int(seconds_of(env.monitoring.alerts.error_window))


def _with_taint(kube: Kube, name: str) -> Obj | None:
    node = kube.get("v1", "Node", name)
    return node if _taint(node) is not None else None


def _without_taint(kube: Kube, name: str) -> bool:
    return _taint(kube.get("v1", "Node", name)) is None


def _pods_on(kube: Kube, job: Obj, node: str) -> list[str]:
    selector = f"batch.kubernetes.io/controller-uid={job['metadata']['uid']}"
    pods = kube.list("v1", "Pod", job["metadata"]["namespace"], label_selector=selector)
    return [p["metadata"]["name"] for p in pods if p["spec"].get("nodeName") == node]


def _refusal(kube: Kube, job: Obj) -> str | None:
    """Kueue's message while it keeps the pinned Job's Workload unadmitted; 'admitted' if it did."""
    workload = workloads.workload_of(kube, job)
    if workload is None:
        return None
    if is_true(workload, "Admitted"):
        return "admitted"
    for entry in (workload.get("status") or {}).get("conditions") or []:
        if entry.get("type") == "QuotaReserved" and entry.get("status") == "False" and entry.get("message"):
            return str(entry["message"])
    return None


def _kept(kube: Kube, namespace: str, selector: str, uids: set[str], node: str) -> bool:
    """The same pods (UIDs) are still on `node`, Running."""
    now = _running(kube, namespace, selector)
    return bool(uids) and all(uid in now and now[uid] == (node, "Running") for uid in uids)
