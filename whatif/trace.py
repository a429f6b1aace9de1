"""A job trace for `generate.py simulate` (docs/whatif.md "The trace format"): load it strictly.

The loader is the environment loader's YAML layer (generators/spec/source.py: line and column
of every node, duplicate keys refused), so every problem is one line at file:line:col with
the trace path (`jobs[3].perPod.gpus`) and a hint, and nothing runs. `check` then holds
the trace against the environment it is replayed on: a team, namespace, queue or tier the
environment does not have is refused at the job's line, as is a pod no node can hold.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from box.dcgm_fake import NVIDIA_GPU
from box.speed import SpeedError, seconds_of
from generators.errors import Location, Problem, SpecError, format_path
from generators.model.environment import Environment
from generators.model.quantity import parse as parse_quantity
from generators.spec.source import Document, load_file
from whatif.horizon import first_arrival_if_none_before

TOP_KEYS = ("environment", "until", "jobs", "inference")
INFERENCE_KEYS = ("service", "load", "until")
STEP_KEYS = ("at", "value")
JOB_KEYS = (
    "name",
    "at",
    "team",
    "namespace",
    "queue",
    "tier",
    "pods",
    "perPod",
    "duration",
    "topology",
    "failure",
)
REQUIRED = ("name", "at", "team", "pods", "perPod", "duration")
PER_POD_KEYS = ("gpus", "cpu", "memory")
TOPOLOGY_KEYS = ("required", "preferred")
FAILURE_KEYS = ("after", "xid")
# A job's name becomes its Job's name (with a short run suffix): a DNS-1123 label of at most
# 40 characters leaves room for the suffix and Kueue's Workload name (job-<name>-<hash>).
NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?")
DEFAULT_CPU = "1"
DEFAULT_MEMORY = "4Gi"


@dataclass(frozen=True)
class Job:
    """One training job of the trace; times are trace seconds (before --speed divides them)."""

    name: str
    at: float  # arrival, seconds after the trace starts
    team: str
    namespace: str  # "" until resolved against the environment (check)
    queue: str  # "" until resolved
    tier: str  # "" until resolved
    pods: int
    gpus: int  # per pod
    cpu: str  # per pod, a Kubernetes quantity
    memory: str  # per pod
    duration: float  # seconds each pod runs once started
    topology: tuple[str, str] | None  # ("required" | "preferred", level label)
    failure_after: float | None  # one pod is killed this long after the job's pods start
    where: Location
    failure_xid: int | None = None  # and its node's GPU reports this XID (the health controller acts)

    @property
    def total_gpus(self) -> int:
        return self.pods * self.gpus


@dataclass(frozen=True)
class Inference:
    """The serving load curve: the HPA metric's value of one inference service over trace time."""

    service: str  # the Deployment's name ("" until resolved: the environment's first service)
    steps: tuple[tuple[float, float], ...]  # (trace seconds, metric value), by time
    until: float  # trace seconds the curve lasts (the replay runs at least that long)
    where: Location


@dataclass(frozen=True)
class Trace:
    path: str  # as shown in errors
    environment: str | None
    jobs: tuple[Job, ...]
    inference: Inference | None = None
    until: float | None = None  # the trace's horizon: the replay stops at this trace second

    @property
    def span(self) -> float:
        """Trace seconds from the first arrival to the last arrival plus its duration, or the
        end of the inference curve if later."""
        jobs = max((j.at + j.duration for j in self.jobs), default=0.0)
        return max(jobs, self.inference.until if self.inference else 0.0)


class _Reader:
    def __init__(self, document: Document) -> None:
        self.document = document
        self.problems: list[Problem] = []

    def fail(self, path: tuple[str | int, ...], message: str, hint: str = "", key: bool = False) -> None:
        self.problems.append(Problem(self.document.locate(path, key=key), message, format_path(path), hint))

    def keys(self, value: dict[str, Any], allowed: tuple[str, ...], path: tuple[str | int, ...]) -> None:
        for key in value:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(allowed)}"
                self.fail((*path, key), f"unknown key '{key}'", hint, key=True)

    def seconds(self, value: Any, path: tuple[str | int, ...], positive: bool) -> float | None:
        """Seconds as a number or a duration string ("90s", "1h30m")."""
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            self.fail(path, f"expected seconds or a duration like 90s or 1h30m, not {value!r}")
            return None
        try:
            seconds = float(seconds_of(value)) if isinstance(value, str) else float(value)
        except SpeedError as err:
            self.fail(path, str(err))
            return None
        if seconds < 0 or (positive and seconds == 0):
            self.fail(path, f"must be {'above' if positive else 'at least'} zero, not {value!r}")
            return None
        return seconds

    def integer(self, value: Any, path: tuple[str | int, ...]) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.fail(path, f"expected a whole number of at least 1, not {value!r}")
            return None
        return value

    def quantity(self, value: Any, path: tuple[str | int, ...]) -> str | None:
        try:
            parse_quantity(value)
        except (ValueError, TypeError):
            self.fail(path, f"not a Kubernetes quantity: {value!r}", "like 4, 500m, 16Gi")
            return None
        return str(value)

    def mapping(self, value: Any, path: tuple[str | int, ...], allowed: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(path, f"expected a mapping with {', '.join(allowed)}")
            return {}
        self.keys(value, allowed, path)
        return value

    def job(self, raw: Any, index: int) -> Job | None:
        path: tuple[str | int, ...] = ("jobs", index)
        value = self.mapping(raw, path, JOB_KEYS)
        if not value:
            return None
        before = len(self.problems)
        for key in REQUIRED:
            if key not in value:
                self.fail(path, f"missing required key '{key}'", f"a job needs {', '.join(REQUIRED)}")
        name = value.get("name")
        if "name" in value and not (isinstance(name, str) and NAME.fullmatch(name)):
            self.fail(
                (*path, "name"),
                f"job name {name!r} is not a DNS label of at most 40 characters",
                "lower-case letters, digits and '-'",
            )
        strings = {k: value.get(k, "") for k in ("team", "namespace", "queue", "tier")}
        for key, text in strings.items():
            if key in value and not (isinstance(text, str) and text):
                self.fail((*path, key), f"expected a name, not {text!r}")
        at = self.seconds(value.get("at", 0), (*path, "at"), positive=False)
        duration = self.seconds(value.get("duration", 1), (*path, "duration"), positive=True)
        pods = self.integer(value.get("pods", 1), (*path, "pods"))
        per_pod = self.mapping(value.get("perPod", {}), (*path, "perPod"), PER_POD_KEYS)
        if "perPod" in value and "gpus" not in per_pod:
            self.fail(
                (*path, "perPod"), "missing required key 'gpus'", "GPUs per pod, e.g. perPod: {gpus: 8}"
            )
        gpus = self.integer(per_pod.get("gpus", 1), (*path, "perPod", "gpus"))
        cpu = self.quantity(per_pod.get("cpu", DEFAULT_CPU), (*path, "perPod", "cpu"))
        memory = self.quantity(per_pod.get("memory", DEFAULT_MEMORY), (*path, "perPod", "memory"))
        topology = self.topology(value.get("topology"), (*path, "topology"))
        failure = xid = None
        if "failure" in value:
            spec = self.mapping(value["failure"], (*path, "failure"), FAILURE_KEYS)
            failure = self.seconds(spec.get("after"), (*path, "failure", "after"), positive=True)
            if "xid" in spec:
                xid = self.integer(spec["xid"], (*path, "failure", "xid"))
        if len(self.problems) > before or None in (at, duration, pods, gpus, cpu, memory):
            return None
        assert at is not None and duration is not None and pods is not None and gpus is not None
        return Job(
            str(name),
            at,
            str(strings["team"]),
            str(strings["namespace"]),
            str(strings["queue"]),
            str(strings["tier"]),
            pods,
            gpus,
            str(cpu),
            str(memory),
            duration,
            topology,
            failure,
            self.document.locate(path),
            xid,
        )

    def resolved(self, job: Job, index: int, env: Environment) -> Job:
        """`job` with its namespace (the team's first), queue (the team's queue named like the
        team, else its first) and tier (the environment's default training tier) filled in,
        each checked against `env`; a problem is recorded at its key and `job` returned."""
        path: tuple[str | int, ...] = ("jobs", index)
        teams = {t.name: t for t in env.teams}
        team = teams.get(job.team)
        if team is None:
            close = difflib.get_close_matches(job.team, sorted(teams), n=1)
            self.fail(
                (*path, "team"),
                f"environment {env.name} has no team '{job.team}'",
                f"did you mean '{close[0]}'?" if close else f"teams: {', '.join(sorted(teams))}",
            )
            return job
        namespace = job.namespace or team.namespaces[0]
        if namespace not in team.namespaces:
            self.fail(
                (*path, "namespace"),
                f"namespace '{namespace}' is not team {team.name}'s",
                f"its namespaces: {', '.join(team.namespaces)}",
            )
        queues = {q.name: q for q in env.cluster_queues if q.team == team.name}
        name = job.queue or (team.name if team.name in queues else next(iter(queues), ""))
        queue = queues.get(name)
        if queue is None:
            self.fail(
                (*path, "queue"),
                f"team {team.name} has no queue '{name}'",
                f"its queues: {', '.join(queues) or 'none (no share and nothing to borrow)'}",
            )
            return job
        tiers = {t.name: t for t in env.training_tiers}
        tier = job.tier or env.default_training_tier.name
        if tier not in tiers:
            self.fail(
                (*path, "tier"),
                f"'{tier}' is not a training tier of {env.name}",
                f"training tiers: {', '.join(tiers)}",
            )
        pools = [env.pool(f.pool) for f in queue.flavors]
        if job.gpus > max(p.gpus_per_node for p in pools):
            self.fail(
                (*path, "perPod", "gpus"),
                f"{job.gpus} GPUs per pod fit no node of queue {name}",
                f"its pools have {', '.join(f'{p.name}: {p.gpus_per_node}' for p in pools)} per node",
            )
        if job.failure_xid is not None:
            controller = env.health.controller if env.health is not None else None
            nvidia = [p.name for p in pools if p.gpu_resource == NVIDIA_GPU]
            if controller is None:
                self.fail(
                    (*path, "failure", "xid"),
                    f"environment {env.name} runs no trainyard health controller to act on an XID",
                    "drop xid (the pod is still killed), or set health.backend: trainyard",
                )
            elif not nvidia:
                self.fail(
                    (*path, "failure", "xid"),
                    f"queue {name}'s pools have no {NVIDIA_GPU} GPUs to report an XID",
                    "drop xid: the box's synthetic dcgm-exporter serves NVIDIA pools only",
                )
        if job.topology is not None:
            levels = sorted({level for p in pools for level in p.topology_levels})
            if not queue.topology or job.topology[1] not in levels:
                self.fail(
                    (*path, "topology", job.topology[0]),
                    f"queue {name} has no topology level '{job.topology[1]}'",
                    f"its levels: {', '.join(levels)}"
                    if queue.topology and levels
                    else "the queue is not topology-aware; drop topology",
                )
        return replace(job, namespace=namespace, queue=name, tier=tier)

    def inference(self, raw: Any) -> Inference | None:
        path: tuple[str | int, ...] = ("inference",)
        value = self.mapping(raw, path, INFERENCE_KEYS)
        if not isinstance(raw, dict):
            return None
        before = len(self.problems)
        service = value.get("service", "")
        if "service" in value and not (isinstance(service, str) and service):
            self.fail((*path, "service"), f"expected a Deployment name, not {service!r}")
        raw_steps = value.get("load")
        if not isinstance(raw_steps, list) or not raw_steps:
            self.fail(
                (*path, "load") if "load" in value else path,
                "expected a non-empty list of steps {at, value}"
                if "load" in value
                else "missing required key 'load'",
                "e.g. load: [{at: 0, value: 0}, {at: 10m, value: 36}]",
            )
            raw_steps = []
        steps: list[tuple[float, float]] = []
        for index, raw_step in enumerate(raw_steps):
            where = (*path, "load", index)
            step = self.mapping(raw_step, where, STEP_KEYS)
            if not step:
                continue
            for key in STEP_KEYS:
                if key not in step:
                    self.fail(
                        where, f"missing required key '{key}'", "a step is {at: SECONDS, value: NUMBER}"
                    )
            at = self.seconds(step.get("at", 0), (*where, "at"), positive=False)
            level = step.get("value", 0)
            if isinstance(level, bool) or not isinstance(level, int | float) or level < 0:
                self.fail((*where, "value"), f"expected a number of at least zero, not {level!r}")
                continue
            if at is None:
                continue
            if steps and at <= steps[-1][0]:
                self.fail(
                    (*where, "at"), f"step at {at:g} s is not after the one before ({steps[-1][0]:g} s)"
                )
                continue
            steps.append((at, float(level)))
        until = self.seconds(
            value.get("until", steps[-1][0] if steps else 0), (*path, "until"), positive=False
        )
        if until is not None and steps and until < steps[-1][0]:
            self.fail(
                (*path, "until"), f"the curve ends ({until:g} s) before its last step ({steps[-1][0]:g} s)"
            )
        if len(self.problems) > before or until is None:
            return None
        return Inference(str(service), tuple(steps), until, self.document.locate(path))

    def resolved_inference(self, inference: Inference, env: Environment) -> Inference:
        """`inference` with its service filled in and checked against `env`'s overflow.inference."""
        services = [s.deployment for s in env.overflow.inference] if env.overflow is not None else []
        if not services:
            self.fail(
                ("inference",),
                f"environment {env.name} declares no overflow.inference service to load",
                "drop inference, or declare the service under overflow.inference",
            )
            return inference
        name = inference.service or services[0]
        if name not in services:
            close = difflib.get_close_matches(name, services, n=1)
            self.fail(
                ("inference", "service"),
                f"environment {env.name} has no inference service '{name}'",
                f"did you mean '{close[0]}'?" if close else f"its services: {', '.join(services)}",
            )
        return replace(inference, service=name)

    def topology(self, raw: Any, path: tuple[str | int, ...]) -> tuple[str, str] | None:
        if raw is None:
            return None
        value = self.mapping(raw, path, TOPOLOGY_KEYS)
        kinds = [k for k in TOPOLOGY_KEYS if k in value]
        if len(kinds) != 1 or not isinstance(value[kinds[0]], str):
            self.fail(
                path,
                "expected exactly one of required or preferred, naming a topology level",
                "e.g. topology: {required: topology.trainyard.dev/rack}",
            )
            return None
        return kinds[0], value[kinds[0]]


def load(path: Path, display: str, env: Environment | None = None) -> Trace:
    """The trace at `path` (`display` is how errors name it), resolved against `env` when
    given (namespace, queue and tier filled in, see _Reader.resolved); SpecError lists every
    problem."""
    try:
        document = load_file(path, display)
    except SpecError as err:  # the YAML layer's words are the environment file's
        raise SpecError(
            [
                replace(
                    p,
                    message=p.message.replace("environment file", "trace"),
                    hint="a trace holds jobs: [...] (docs/whatif.md)" if "empty" in p.message else p.hint,
                )
                for p in err.problems
            ]
        ) from None
    if env is not None and document.value.get("environment") not in (None, env.name):
        raise SpecError(
            [
                Problem(
                    document.locate(("environment",)),
                    f"the trace is for environment {document.value['environment']!r}, not {env.name!r}",
                    "environment",
                    "replay it on its own environment, or drop the key",
                )
            ]
        )
    reader = _Reader(document)
    reader.keys(document.value, TOP_KEYS, ())
    environment = document.value.get("environment")
    if environment is not None and not isinstance(environment, str):
        reader.fail(("environment",), f"expected an environment name, not {environment!r}")
    until = None
    if "until" in document.value:
        until = reader.seconds(document.value["until"], ("until",), positive=True)
    raw_jobs = document.value.get("jobs")
    if not isinstance(raw_jobs, list) or not raw_jobs:
        reader.fail(("jobs",), "expected a non-empty list of jobs", "see docs/whatif.md, The trace format")
        raw_jobs = []
    jobs: list[Job] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(raw_jobs):
        job = reader.job(raw, index)
        if job is None:
            continue
        if job.name in seen:
            reader.fail(
                ("jobs", index, "name"),
                f"job name '{job.name}' is used twice",
                f"first at jobs[{seen[job.name]}]",
            )
        seen.setdefault(job.name, index)
        jobs.append(reader.resolved(job, index, env) if env is not None else job)
    first = first_arrival_if_none_before((j.at for j in jobs), until) if until is not None else None
    if first is not None:
        reader.fail(
            ("until",),
            f"no job arrives before the trace's horizon ({until:g} s; the first at {first:g} s)",
            "raise until, or drop it to replay until every job finished",
        )
    inference = reader.inference(document.value["inference"]) if "inference" in document.value else None
    if inference is not None and env is not None:
        inference = reader.resolved_inference(inference, env)
    if inference is not None and inference.service in seen:
        # The replay labels the service's pods with its name, as it labels a job's pods with the
        # job's (replay.JOB_LABEL): a job of that name would be counted with the serving pods.
        reader.fail(
            ("jobs", seen[inference.service], "name"),
            f"job name '{inference.service}' is the name of the trace's inference service",
            "rename the job: its pods and the service's would be counted together",
        )
    if reader.problems:  # in file order, as a reader goes through the file
        raise SpecError(sorted(reader.problems, key=lambda p: (p.location.line, p.location.col)))
    ordered = tuple(sorted(jobs, key=lambda j: (j.at, j.name)))
    return Trace(display, environment, ordered, inference, until)
