"""What every fault scene shares: its timeline, the invariant sampler run at every step, and
the faults themselves (a box process stopped and started again as it was).

A fault scene drives the running loop to the moment of its fault, injects it, and waits for
the loop to settle again; every wait samples the cluster (box/invariants.py) at each poll,
from before the fault until settled. The first violated invariant ends the scene (`ok`
False, so `box scene` exits 1) after its clean-up; the timeline says what happened when.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from box import invariants
from box.daemon import Daemon, free_port, stop_group, verify_gone
from box.invariants import GateReading, Invariants, Violation
from box.kube import is_true
from box.scenes import day_in_the_life as day
from box.scenes.context import SceneContext
from box.scenes.workloads import workload_of
from box.speed import seconds_of
from box.state import Process, State

T = TypeVar("T")
POLL_SECONDS = 1.0
REACT_SECONDS = 180  # any one controller reaction on 2 busy cores


class InvariantBroken(RuntimeError):
    """The first violated invariant: the scene stops there (after its clean-up)."""


@dataclass
class FaultResult:
    """A fault scene's timeline, its measured timings and what went wrong."""

    name: str
    steps: list[tuple[float, str]] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    samples: int = 0
    unread: int = 0  # samples skipped because the API did not answer

    @property
    def ok(self) -> bool:
        return not self.violations and not self.problems

    def lines(self) -> list[str]:
        found = [f"+{at:7.1f}s  {text}" for at, text in self.steps]
        found.append(
            f"{self.name}: {self.samples} samples of the invariants"
            + (f" ({self.unread} more unread: the API down)" if self.unread else "")
            + ", "
            + ("all held" if not self.violations else f"{len(self.violations)} violated")
            + "; "
            + ", ".join(f"{k} {v:.1f}s" for k, v in self.timings.items())
        )
        found += [v.line() for v in self.violations]
        found += [f"BROKEN: {p}" for p in self.problems]
        return found


class Sampler:
    """Samples the invariants at every step of a scene and keeps its timeline."""

    def __init__(
        self,
        context: SceneContext,
        result: FaultResult,
        namespaces: Iterable[str],
        gate_url: Callable[[], str | None],
    ) -> None:
        self.context, self.kube, self.result = context, context.kube, result
        self.checks = Invariants(invariants.limits_of(context.env, POLL_SECONDS))
        self.namespaces = sorted(set(namespaces))
        self.gate_url = gate_url
        self.began = time.monotonic()
        self.began_wall = time.time()
        self.active = False  # sampling starts with `start`, before the fault

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """A scene's body: a broken invariant ends it (the violation is already in the
        timeline), a failed wait becomes a problem; either way sampling stops, and the
        scene's own clean-up (its `finally`) runs after."""
        try:
            yield
        except InvariantBroken:
            pass
        except AssertionError as err:
            self.problem(str(err))
        finally:
            self.active = False

    def now(self) -> float:
        return time.monotonic() - self.began

    def step(self, text: str) -> None:
        self.result.steps.append((self.now(), text))
        self.context.say(f"+{self.now():.1f}s {text}")

    def problem(self, text: str) -> None:
        self.result.problems.append(text)
        self.step(f"BROKEN: {text}")

    def gate(self) -> GateReading | None:
        url = self.gate_url()
        blind = GateReading(None, {}, 0)  # nobody acting: as blind as a failed query
        if url is None:
            return blind
        try:
            metrics = metrics_of(url, "trainyard_gate_")
        except OSError:
            return blind
        return invariants.gate_reading(metrics, self.checks.limits.gates)

    def sample(self, final: bool = False) -> invariants.Snapshot | None:
        if not self.active:
            return None
        try:
            snapshot = invariants.take(self.kube, self.now(), time.time(), self.namespaces, self.gate())
        except Exception:  # the API itself is the fault (apiserver-restart): nothing to read
            self.result.unread += 1
            return None
        found = self.checks.check(snapshot, final)
        self.result.samples = self.checks.samples
        if found:
            self.result.violations += found
            for violation in found:
                self.step(violation.line().split("  ", 1)[1])
            raise InvariantBroken(found[0].line())
        return snapshot

    def until(self, check: Callable[[], T | None], timeout: float, what: str) -> T:
        """Poll `check` (sampling the invariants before each poll) until it returns a value."""
        deadline = time.monotonic() + timeout
        while True:
            self.sample()
            found = check()
            if found is not None and found is not False:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(POLL_SECONDS)

    def hold(self, seconds: float, check: Callable[[], str | None]) -> None:
        """Sample for `seconds`; `check` returns a problem to report (and stop on), or None."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.sample()
            wrong = check()
            if wrong:
                self.problem(wrong)
                raise InvariantBroken(wrong)
            time.sleep(POLL_SECONDS)


def metrics_of(url: str, prefix: str) -> dict[str, float]:
    """A process's /metrics samples starting with `prefix`, keyed as printed (`name{labels}`)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
        text = response.read().decode()
    found = {}
    for line in text.splitlines():
        if line.startswith(prefix):
            key, value = line.rsplit(" ", 1)
            found[key] = float(value)
    return found


def process_url(state: State, name: str) -> str | None:
    for process in state.processes:
        if process.name == name:
            return f"http://127.0.0.1:{process.ports[0]}"
    return None


def write_scrape_target(folder: Path, name: str, target: str, labels: dict[str, str]) -> Path:
    """A file_sd file (Prometheus watches the box's scene-targets folder) naming `target`
    with `labels`; a `job` label there wins over the scrape job's name, so the rendered
    alerts' `job="..."` selectors match the process as they would its ServiceMonitor's."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps([{"targets": [target], "labels": labels}]), encoding="utf-8")
    temporary.replace(path)
    return path


@dataclass
class Stopped:
    """A box process stopped by a fault: how to start it again exactly as it ran."""

    record: Process
    argv: list[str]
    cwd: str
    env: dict[str, str]


def command_of(folder: Path, name: str) -> Stopped:
    """How the box's process `name` runs: its record, and from /proc its command line,
    working directory and environment (to start it again, or a second replica of it)."""
    state = State.load(folder)
    assert state is not None
    [record] = [p for p in state.processes if p.name == name]
    proc = Path("/proc") / str(record.pgid)
    argv = [a.decode() for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
    cwd = os.readlink(proc / "cwd")
    environ = dict(
        item.decode().split("=", 1) for item in (proc / "environ").read_bytes().split(b"\0") if b"=" in item
    )
    return Stopped(record, argv, cwd, environ)


def stop_process(folder: Path, name: str) -> Stopped:
    """Stop the box's process `name` (SIGTERM, verified gone, ports closed), remembering how
    it ran (command_of)."""
    stopped = command_of(folder, name)
    stop_group(name, stopped.record.pgid, stopped.record.ports)
    return stopped


def kill_process(folder: Path, name: str) -> Stopped:
    """SIGKILL the box's process `name`, as a node or OOM kill would: no clean-up, no Lease
    release; verified gone."""
    stopped = command_of(folder, name)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(stopped.record.pgid, signal.SIGKILL)
    verify_gone(name, stopped.record.pgid, stopped.record.ports)
    return stopped


def start_replica(folder: Path, name: str, replica: str) -> Daemon:
    """A second replica of the box's process `name`, as the rendered Deployment's second pod:
    the same command line with its own metrics port (argparse keeps the last value) and log,
    recorded in the state file as `replica`, so `box down` stops it."""
    running = command_of(folder, name)
    port = free_port()
    log = Path(running.record.log).with_name(f"{replica}.log")
    daemon = Daemon(
        replica,
        [*running.argv, f"--metrics-port={port}"],
        log,
        ports=[port],
        env=running.env,
        cwd=Path(running.cwd),
    )
    daemon.start()
    assert daemon.process is not None
    state = State.load(folder)
    assert state is not None
    state.processes.append(Process(replica, daemon.process.pid, [port], str(log)))
    state.save(folder)
    return daemon


def forget_process(folder: Path, name: str) -> None:
    """Stop the box's process `name` and drop it from the state file (a replica a scene added)."""
    state = State.load(folder)
    assert state is not None
    for process in [p for p in state.processes if p.name == name]:
        stop_group(name, process.pgid, process.ports)
        state.processes.remove(process)
    state.save(folder)


def start_again(folder: Path, stopped: Stopped) -> Daemon:
    """Start a stopped process as it ran (same arguments, ports, log), and record its new
    process group in the box's state file, so `box down` stops it."""
    record = stopped.record
    daemon = Daemon(
        record.name,
        stopped.argv,
        Path(record.log),
        ports=record.ports,
        env=stopped.env,
        cwd=Path(stopped.cwd),
    )
    daemon.start()
    assert daemon.process is not None
    state = State.load(folder)
    assert state is not None
    for process in state.processes:
        if process.name == record.name:
            process.pgid = daemon.process.pid
    state.save(folder)
    return daemon


def firing(prometheus: str) -> set[str]:
    """Alert names firing in Prometheus now."""
    with urllib.request.urlopen(f"{prometheus}/api/v1/alerts", timeout=5) as response:
        alerts = json.load(response)["data"]["alerts"]
    return {a["labels"]["alertname"] for a in alerts if a.get("state") == "firing"}


def fired_between(prometheus: str, alert: str, start: float, end: float) -> float | None:
    """The first Unix time in [start, end] at which Prometheus's ALERTS series shows `alert`
    firing (it records each evaluation), or None."""
    query = urllib.parse.urlencode(
        {
            "query": f'ALERTS{{alertname="{alert}", alertstate="firing"}}',
            "start": f"{start:.0f}",
            "end": f"{end:.0f}",
            "step": "1",
        }
    )
    with urllib.request.urlopen(f"{prometheus}/api/v1/query_range?{query}", timeout=10) as response:
        result = json.load(response)["data"]["result"]
    stamps = [float(t) for series in result for t, _ in series["values"]]
    return min(stamps) if stamps else None


class Spill:
    """The loop a fault scene breaks: day-in-the-life's (box/scenes/day_in_the_life.py, whose
    plan and objects it reuses) serving Deployment steady on the inference pool, a training
    gang borrowing all but one node of it, the gate opening the virtual node and the displaced
    replicas running there; then the training ends and the gate's close hold runs. The gang
    runs until the scene ends it (`end_training`)."""

    def __init__(self, context: SceneContext, sampler: Sampler, p: day.Plan) -> None:
        self.kube, self.sampler = context.kube, sampler
        self.p = dataclasses.replace(p, run_seconds=3600)
        self.created: list[tuple[str, str, str, str]] = []
        self.selector = ",".join(f"{k}={v}" for k, v in sorted(p.service.pod_selector.items()))
        self.pool_nodes = day._pool_nodes(self.kube, p.pool)
        self.job = ""
        self.deployment = day.deployment(self.p)  # a scene may shape it before `steady`

    def closed(self) -> bool:
        return day._gate_closed(self.kube, self.p)

    def serving(self) -> tuple[int, int, int]:
        """Ready replicas: all, on the pool, on the virtual node."""
        p = self.p
        pods = [
            x
            for x in self.kube.list("v1", "Pod", p.service.namespace, label_selector=self.selector)
            if not x["metadata"].get("deletionTimestamp")
        ]
        ready = [x for x in pods if is_true(x, "Ready")]
        home = sum(1 for x in ready if x["spec"].get("nodeName") in self.pool_nodes)
        away = sum(1 for x in ready if x["spec"].get("nodeName") == p.provider.node_name)
        return len(ready), home, away

    def steady(self) -> None:
        p, sampler = self.p, self.sampler
        sampler.until(self.closed, REACT_SECONDS, f"the gate closing {p.provider.node_name}")
        made = self.kube.create(self.deployment)
        self.created.append(("apps/v1", "Deployment", made["metadata"]["name"], p.service.namespace))
        sampler.until(
            lambda: self.serving()[1] == p.replicas, REACT_SECONDS, f"{p.replicas} replicas on {p.pool.name}"
        )
        sampler.until(lambda: day._budget(self.kube, p), REACT_SECONDS, "the PDB counting them")
        sampler.active = True

    def spill(self) -> float:
        """The gang arrives, the gate opens, the spill lands; seconds it took."""
        p, sampler = self.p, self.sampler
        self.job = f"fault-gang-{uuid.uuid4().hex[:6]}"
        job = self.kube.create(day.gang_job(p, self.job))
        self.created.append(("batch/v1", "Job", self.job, p.namespace))
        arrived = sampler.now()
        sampler.until(
            lambda: is_true(workload_of(self.kube, job), "Admitted"),
            REACT_SECONDS,
            f"Kueue admitting {self.job}",
        )
        sampler.until(lambda: not self.closed(), REACT_SECONDS, "the gate opening")
        sampler.until(
            lambda: self.serving() == (p.replicas, p.replicas - p.spilled, p.spilled),
            REACT_SECONDS,
            f"{p.spilled} replicas Running on {p.provider.node_name}",
        )
        return sampler.now() - arrived

    def end_training(self) -> int:
        """Delete the gang's Job (its pods' end recorded as the scene's); how many pods."""
        p = self.p
        pods = self.kube.list("v1", "Pod", p.namespace, label_selector=f"job-name={self.job}")
        self.sampler.checks.deleted_by_scene(p.namespace, [x["metadata"]["name"] for x in pods])
        self.kube.delete("batch/v1", "Job", self.job, p.namespace)
        return len(pods)

    def freed(self, gate_url: Callable[[], str | None]) -> float:
        """Wait until the acting gate reads at least its close line: its close hold runs."""
        line = self.p.provider.band.close_when_free_gpus_at_least

        def reading() -> float | None:
            url = gate_url()
            free = (
                metrics_of(url, "trainyard_gate_free_gpus").get("trainyard_gate_free_gpus") if url else None
            )
            return free if free is not None and free >= line else None

        return self.sampler.until(reading, REACT_SECONDS, f"the gate reading at least {line} free GPUs")

    def home(self) -> None:
        p = self.p
        back = p.overflow.migrate_back
        interval, age = seconds_of(back.descheduling_interval), seconds_of(back.min_pod_age)
        self.sampler.until(
            lambda: self.serving()[1] == p.replicas,
            REACT_SECONDS + age + 2 * (p.spilled + 1) * interval,
            f"all {p.replicas} replicas home on {p.pool.name}",
        )

    def settle(self) -> None:
        """Sample until late events have landed, then the final check of every ended pod."""
        self.sampler.hold(min(self.sampler.checks.limits.cause_grace_seconds, 10), lambda: None)
        self.sampler.sample(final=True)

    def remove(self) -> None:
        for api_version, kind, name, namespace in reversed(self.created):
            self.kube.delete(api_version, kind, name, namespace)


def transitions(url: str, provider: str) -> tuple[float, float]:
    """The gate process's (open, close) transition counters for `provider`."""
    found = metrics_of(url, "trainyard_gate_transitions_total")
    opened = next((v for k, v in found.items() if f'gate="{provider}"' in k and 'direction="open"' in k), 0.0)
    closed = next(
        (v for k, v in found.items() if f'gate="{provider}"' in k and 'direction="close"' in k), 0.0
    )
    return opened, closed
