"""What every fault scene shares: its timeline, the invariant sampler run at every step, and
the faults themselves (a box process stopped and started again as it was).

A fault scene drives the running loop to the moment of its fault, injects it, and waits for
the loop to settle again; every wait samples the cluster (box/invariants.py) at each poll,
from before the fault until settled. The first violated invariant ends the scene (`ok`
False, so `box scene` exits 1) after its clean-up; the timeline says what happened when.
"""

from __future__ import annotations

import json
import os
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from box import invariants
from box.daemon import Daemon, stop_group
from box.invariants import GateReading, Invariants, Violation
from box.scenes.context import SceneContext
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

    @property
    def ok(self) -> bool:
        return not self.violations and not self.problems

    def lines(self) -> list[str]:
        found = [f"+{at:7.1f}s  {text}" for at, text in self.steps]
        found.append(
            f"{self.name}: {self.samples} samples of the invariants, "
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
        self.active = False  # sampling starts with `start`, before the fault

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
        if url is None:
            return None
        try:
            metrics = metrics_of(url, "trainyard_gate_")
        except OSError:
            return None  # the process is down: nothing reported, nothing to compare
        return invariants.gate_reading(metrics, self.checks.limits.gates)

    def sample(self, final: bool = False) -> invariants.Snapshot | None:
        if not self.active:
            return None
        snapshot = invariants.take(self.kube, self.now(), time.time(), self.namespaces, self.gate())
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


def stop_process(folder: Path, name: str) -> Stopped:
    """Stop the box's process `name` (SIGTERM, verified gone, ports closed), remembering its
    command line, working directory and environment from /proc to start it again."""
    state = State.load(folder)
    assert state is not None
    [record] = [p for p in state.processes if p.name == name]
    proc = Path("/proc") / str(record.pgid)
    argv = [a.decode() for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
    cwd = os.readlink(proc / "cwd")
    environ = dict(
        item.decode().split("=", 1) for item in (proc / "environ").read_bytes().split(b"\0") if b"=" in item
    )
    stop_group(name, record.pgid, record.ports)
    return Stopped(record, argv, cwd, environ)


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
