"""A trace (docs/whatif.md, The trace format) from a real cluster's Kueue Workloads.

    generate.py trace from-workloads WORKLOADS.json --env ENV [--pods PODS.json] [-o FILE]

WORKLOADS.json is `kubectl get workloads -A -o json`; PODS.json (optional) `kubectl get pods
-A -o json`. One trace job per Workload that ran to its end, read from what Kueue wrote
(field names as Kueue v0.19.2 writes kueue.x-k8s.io/v1beta2, seen in
tests/whatif/fixtures/workloads.json):
- name: the owning Job's name (metadata.ownerReferences), made a DNS label of at most 40
  characters, `-2`, `-3` on a repeat; the Workload's own name when no owner is named;
- at: metadata.creationTimestamp, seconds after the earliest kept Workload's;
- team: the environment's team owning metadata.namespace (namespace written only when it is
  not the team's first); queue: spec.queueName (written only when it is not the default);
- tier: spec.priorityClassRef.name (a WorkloadPriorityClass; v1beta1's
  spec.priorityClassName), when it names one;
- pods, perPod: spec.podSets (one pod set, or several asking the same per pod: their counts
  add up), per pod the containers' requests added (GPUs of the environment's GPU resource);
- topology: podSets[0].topologyRequest.required or .preferred (Kueue v0.19.2 itself sets
  preferred on every pod set of a topology-aware queue, so such jobs all carry it);
- duration, with --pods: the longest run of the Workload's Succeeded pods (matched by the
  pod annotation kueue.x-k8s.io/workload and the namespace), each from its start (the
  container's state.terminated.startedAt, or the pod's Ready=True lastTransitionTime where
  that is earlier: KWOK writes startedAt at completion, a kubelet sets Ready False at the
  end) to its terminated.finishedAt; a Failed pod of the Workload gives `failure: {after:
  its run}` (the first one; a pod deleted outright, as a node loss does, leaves no trace);
- duration, without --pods (or when no Succeeded pod of it is in PODS.json): from the
  Workload's conditions, PodsReady=True (all pods running) or, without it, Admitted=True,
  to Finished=True, by their lastTransitionTime (whole seconds). A preempted and readmitted
  Workload keeps only its last admission's conditions: that is its last, whole run.
Left out, each counted on stderr: a Workload not Finished (no duration yet), one in a
namespace of no team, one asking no GPU, pod sets of different shapes, a priority class
that is not a training tier. Same input, same bytes out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from generators.errors import Location, Problem, SpecError, format_path
from generators.model.environment import Environment
from generators.model.quantity import QuantityError, canonical
from generators.model.quantity import parse as parse_quantity
from whatif.trace import DEFAULT_CPU, DEFAULT_MEMORY

Path_ = tuple[str | int, ...]
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"  # on every pod Kueue manages (seen in pods.json)
NAME_LENGTH = 40  # whatif/trace.py NAME


class _Bad(Exception):
    """One problem of the input at a JSON path; turned into a file:line:col Problem."""

    def __init__(self, path: Path_, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.path, self.message, self.hint = path, message, hint


@dataclass
class Input:
    """A parsed JSON file and how errors name it."""

    display: str
    text: str
    value: Any

    def problem(self, bad: _Bad) -> Problem:
        return Problem(
            _locate(self.text, self.display, bad.path), bad.message, format_path(bad.path), bad.hint
        )


def _locate(text: str, display: str, path: Path_) -> Location:
    """file:line:col of `path` in the JSON `text`. Only on the error path: JSON is YAML, so
    libyaml's composer gives every node's mark; a fast json.loads read the file first."""
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        node: yaml.Node | None = yaml.compose(text, Loader=loader)
    except yaml.YAMLError:
        return Location(display)
    at = node
    for part in path:
        child = None
        if isinstance(at, yaml.MappingNode):
            child = next((v for k, v in at.value if k.value == part), None)
        elif isinstance(at, yaml.SequenceNode) and isinstance(part, int) and part < len(at.value):
            child = at.value[part]
        if child is None:
            break
        at = child
    if at is None:
        return Location(display)
    return Location(display, at.start_mark.line + 1, at.start_mark.column + 1)


def read(path: Path, display: str, kind: str) -> Input:
    """`path` as a kubectl `-o json` List of `kind`; SpecError (one line) if it is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise SpecError([Problem(Location(display), f"not UTF-8 text ({err.reason})")]) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise SpecError(
            [
                Problem(
                    Location(display, err.lineno, err.colno),
                    f"not JSON: {err.msg}",
                    hint=f"give the output of kubectl get {kind.lower()}s -A -o json",
                )
            ]
        ) from None
    source = Input(display, text, value)
    if not isinstance(value, dict) or not isinstance(value.get("items"), list):
        raise SpecError(
            [
                source.problem(
                    _Bad(
                        ("items",),
                        "expected a List with items",
                        f"give the output of kubectl get {kind.lower()}s -A -o json",
                    )
                )
            ]
        )
    return source


KINDS = {str: "a string", int: "an integer", dict: "a mapping", list: "a list"}


def _get(value: Any, path: Path_, base: Path_, kind: type, required: bool = True) -> Any:
    """value[path...] of type `kind`; _Bad at base + path when it is missing or of another type."""
    at = value
    for i, part in enumerate(path):
        if isinstance(part, int):
            ok = isinstance(at, list) and part < len(at)
        else:
            ok = isinstance(at, dict) and part in at
        if not ok:
            if not required:
                return None
            raise _Bad((*base, *path[: i + 1]), f"missing {format_path(path[: i + 1])}")
        at = at[part]
    if not isinstance(at, kind) or isinstance(at, bool):
        shown = repr(at) if len(repr(at)) <= 60 else repr(at)[:57] + "..."
        raise _Bad((*base, *path), f"expected {KINDS.get(kind, kind.__name__)}, not {shown}")
    return at


def _time(value: Any, path: Path_) -> datetime:
    if not isinstance(value, str):
        raise _Bad(path, f"expected an RFC 3339 time, not {value!r}")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise _Bad(path, f"not an RFC 3339 time: {value!r}", "like 2026-12-01T17:19:17Z") from None


def _conditions(workload: Any, base: Path_) -> dict[str, tuple[str, datetime, Path_]]:
    """type -> (status, lastTransitionTime, its path) of the Workload's conditions."""
    found = {}
    raw = _get(workload, ("status", "conditions"), base, list, required=False) or []
    for i, condition in enumerate(raw):
        path = (*base, "status", "conditions", i)
        kind = _get(condition, ("type",), path, str)
        status = _get(condition, ("status",), path, str)
        found[kind] = (
            status,
            _time(condition.get("lastTransitionTime"), (*path, "lastTransitionTime")),
            path,
        )
    return found


def _quantity(value: Any, path: Path_) -> Fraction:
    try:
        return parse_quantity(value).value
    except (QuantityError, ValueError, TypeError):
        raise _Bad(path, f"not a Kubernetes quantity: {value!r}", "like 4, 500m, 16Gi") from None


@dataclass(frozen=True)
class Shape:
    """Per-pod requests of a pod set: GPUs, CPU (cores) and memory (bytes)."""

    gpus: Fraction
    cpu: Fraction
    memory: Fraction


def _shape(pod_spec: Any, path: Path_, gpu_resource: str) -> Shape:
    totals = {gpu_resource: Fraction(0), "cpu": Fraction(0), "memory": Fraction(0)}
    containers = _get(pod_spec, ("containers",), path, list)
    for i, container in enumerate(containers):
        where = (*path, "containers", i, "resources", "requests")
        requests = (
            _get(container, ("resources", "requests"), (*path, "containers", i), dict, required=False) or {}
        )
        for name in totals:
            if name in requests:
                totals[name] += _quantity(requests[name], (*where, name))
    return Shape(totals[gpu_resource], totals["cpu"], totals["memory"])


def _pod_times(pod: Any, path: Path_) -> tuple[datetime, datetime] | None:
    """(start, finish) of a pod whose containers all terminated; None while one runs."""
    statuses = _get(pod, ("status", "containerStatuses"), path, list, required=False) or []
    starts, ends = [], []
    for i, status in enumerate(statuses):
        where = (*path, "status", "containerStatuses", i, "state", "terminated")
        terminated = _get(
            status, ("state", "terminated"), (*path, "status", "containerStatuses", i), dict, required=False
        )
        if terminated is None:
            return None
        starts.append(_time(terminated.get("startedAt"), (*where, "startedAt")))
        ends.append(_time(terminated.get("finishedAt"), (*where, "finishedAt")))
    if not ends:
        return None
    for i, condition in enumerate(_get(pod, ("status", "conditions"), path, list, required=False) or []):
        if (
            isinstance(condition, dict)
            and condition.get("type") == "Ready"
            and condition.get("status") == "True"
        ):
            starts.append(
                _time(
                    condition.get("lastTransitionTime"),
                    (*path, "status", "conditions", i, "lastTransitionTime"),
                )
            )
    return min(starts), max(ends)


@dataclass
class PodRuns:
    """Per (namespace, Workload name): run seconds of its Succeeded pods and of its Failed ones."""

    succeeded: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    failed: dict[tuple[str, str], list[float]] = field(default_factory=dict)


def pod_runs(pods: Input) -> PodRuns:
    runs = PodRuns()
    problems = []
    for index, pod in enumerate(pods.value["items"]):
        path: Path_ = ("items", index)
        try:
            metadata = _get(pod, ("metadata",), path, dict)
            workload = (metadata.get("annotations") or {}).get(WORKLOAD_ANNOTATION)
            if not isinstance(workload, str):
                continue  # not a pod Kueue manages
            namespace = _get(metadata, ("namespace",), (*path, "metadata"), str)
            phase = (pod.get("status") or {}).get("phase")
            if phase not in ("Succeeded", "Failed"):
                continue
            times = _pod_times(pod, path)
            if times is None:
                continue
            target = runs.succeeded if phase == "Succeeded" else runs.failed
            target.setdefault((namespace, workload), []).append((times[1] - times[0]).total_seconds())
        except _Bad as bad:
            problems.append(pods.problem(bad))
    if problems:
        raise SpecError(problems)
    return runs


@dataclass(frozen=True)
class Converted:
    text: str  # the trace, YAML
    kept: int
    left_out: dict[str, list[str]]  # reason -> namespace/name of each Workload left out
    from_conditions: int  # durations read from conditions although a pods file was given


def _label(name: str) -> str:
    """`name` as a trace job name: a DNS label of at most 40 characters."""
    text = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:NAME_LENGTH].strip("-")
    return text or "job"


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        suffix = f"-{n}"
        candidate = name[: NAME_LENGTH - len(suffix)].rstrip("-") + suffix
    taken.add(candidate)
    return candidate


def _seconds(value: float) -> int:
    return max(1, round(value))


def _cpu(value: Fraction) -> str:
    return canonical(value, "decimal")


def _memory(value: Fraction) -> str:
    return canonical(value, "binary")


@dataclass
class _Job:
    name: str
    created: datetime
    fields: dict[str, str]  # trace keys after name and at, in the documented order


def convert(workloads: Input, env: Environment, pods: Input | None, header: str) -> Converted:
    """The trace of `workloads` on `env` (see the module docstring); SpecError lists every
    problem of the input."""
    resources = {p.gpu_resource for p in env.pools}
    if len(resources) != 1:  # as the replay (whatif/run.py _gpu_resource)
        raise SpecError(
            [
                Problem(
                    Location(workloads.display),
                    f"{env.name}: pools name GPU resources {sorted(resources)}; a trace job asks for one",
                )
            ]
        )
    gpu_resource = resources.pop()
    runs = pod_runs(pods) if pods is not None else PodRuns()
    team_of = {ns: t for t in env.teams for ns in t.namespaces}
    queues = {t.name: [q.name for q in env.cluster_queues if q.team == t.name] for t in env.teams}
    tiers = {t.name for t in env.training_tiers}
    default_tier = env.default_training_tier.name
    left_out: dict[str, list[str]] = {}
    jobs: list[_Job] = []
    problems: list[Problem] = []
    from_conditions = 0
    for index, workload in enumerate(workloads.value["items"]):
        base: Path_ = ("items", index)
        try:
            job, reason, by_conditions = _job(
                workload,
                base,
                env.name,
                gpu_resource,
                runs,
                team_of,
                queues,
                tiers,
                default_tier,
                pods is not None,
            )
        except _Bad as bad:
            problems.append(workloads.problem(bad))
            continue
        if job is None:
            meta = workload.get("metadata") or {}
            left_out.setdefault(reason, []).append(f"{meta.get('namespace')}/{meta.get('name')}")
            continue
        from_conditions += by_conditions
        jobs.append(job)
    if problems:
        raise SpecError(problems)
    if not jobs:
        raise SpecError(
            [
                Problem(
                    Location(workloads.display),
                    "no Workload gives a trace job",
                    hint="; ".join(f"{len(v)} {k}" for k, v in sorted(left_out.items()))
                    or "the List has no items",
                )
            ]
        )
    jobs.sort(key=lambda j: (j.created, j.name))
    start = jobs[0].created
    taken: set[str] = set()
    lines = []
    for job in jobs:
        name = _unique(job.name, taken)
        at = round((job.created - start).total_seconds())
        lines.append(
            "  - {"
            + ", ".join([f"name: {name}", f"at: {at}", *(f"{k}: {v}" for k, v in job.fields.items())])
            + "}"
        )
    text = header + f"environment: {env.name}\njobs:\n" + "\n".join(lines) + "\n"
    return Converted(text, len(jobs), left_out, from_conditions)


def _job(
    workload: Any,
    base: Path_,
    env_name: str,
    gpu_resource: str,
    runs: PodRuns,
    team_of: dict[str, Any],
    queues: dict[str, list[str]],
    tiers: set[str],
    default_tier: str,
    with_pods: bool,
) -> tuple[_Job | None, str, int]:
    """(the job, "", 1 if its duration came from conditions despite --pods) or (None, why left out, 0)."""
    if not isinstance(workload, dict) or workload.get("kind") != "Workload":
        raise _Bad(
            (*base, "kind"),
            f"expected a Workload, not {workload.get('kind') if isinstance(workload, dict) else workload!r}",
            "give the output of kubectl get workloads -A -o json",
        )
    meta = _get(workload, ("metadata",), base, dict)
    name = _get(meta, ("name",), (*base, "metadata"), str)
    namespace = _get(meta, ("namespace",), (*base, "metadata"), str)
    created = _time(meta.get("creationTimestamp"), (*base, "metadata", "creationTimestamp"))
    conditions = _conditions(workload, base)
    finished = conditions.get("Finished")
    if finished is None or finished[0] != "True":
        return None, "not Finished (no duration yet)", 0
    team = team_of.get(namespace)
    if team is None:
        return None, f"in a namespace of no team of {env_name}", 0
    pod_sets = _get(workload, ("spec", "podSets"), base, list)
    shaped = _one_shape(pod_sets, base, gpu_resource)
    if isinstance(shaped, str):
        return None, shaped, 0
    shape, count = shaped
    # v1beta2 (Kueue v0.19.2) names it in priorityClassRef; v1beta1, which kubectl shows for an
    # older Kueue, in priorityClassName
    tier = (
        _get(workload, ("spec", "priorityClassRef", "name"), base, str, required=False)
        or _get(workload, ("spec", "priorityClassName"), base, str, required=False)
        or default_tier
    )
    if tier not in tiers:
        return None, "of a priority class that is no training tier", 0
    owners = [
        o for o in meta.get("ownerReferences") or [] if isinstance(o, dict) and isinstance(o.get("name"), str)
    ]
    job_name = _label(owners[0]["name"] if owners else name)
    timed = _duration(runs.succeeded.get((namespace, name)), conditions, finished, with_pods)
    if isinstance(timed, str):
        return None, timed, 0
    duration, by_conditions = timed
    fields: dict[str, str] = {"team": team.name}
    if namespace != team.namespaces[0]:
        fields["namespace"] = namespace
    queue = _get(workload, ("spec", "queueName"), base, str, required=False)
    names = queues.get(team.name, [])
    default_queue = team.name if team.name in names else (names[0] if names else "")
    if queue and queue != default_queue:
        fields["queue"] = queue
    fields["tier"] = tier
    fields["pods"] = str(count)
    fields["perPod"] = _per_pod(shape)
    fields["duration"] = str(duration)
    request = (
        _get(pod_sets[0], ("topologyRequest",), (*base, "spec", "podSets", 0), dict, required=False) or {}
    )
    for kind in ("required", "preferred"):
        if isinstance(request.get(kind), str):
            fields["topology"] = f"{{{kind}: {request[kind]}}}"
            break
    failed = runs.failed.get((namespace, name))
    if failed:
        fields["failure"] = f"{{after: {_seconds(min(failed))}}}"
    return _Job(job_name, created, fields), "", by_conditions


def _one_shape(pod_sets: list[Any], base: Path_, gpu_resource: str) -> tuple[Shape, int] | str:
    """The one pod shape of the Workload's pod sets and their pod count, or why it has none
    a trace job can take."""
    if not pod_sets:
        raise _Bad((*base, "spec", "podSets"), "expected at least one pod set")
    shapes, count = [], 0
    for i, pod_set in enumerate(pod_sets):
        where = (*base, "spec", "podSets", i)
        count += _get(pod_set, ("count",), where, int)
        spec = _get(pod_set, ("template", "spec"), where, dict)
        shapes.append(_shape(spec, (*where, "template", "spec"), gpu_resource))
    if any(s != shapes[0] for s in shapes):
        return "with pod sets of different shapes (a trace job has one)"
    shape = shapes[0]
    if shape.gpus <= 0:
        return f"asking no {gpu_resource}"
    if shape.gpus.denominator != 1:
        raise _Bad(
            (*base, "spec", "podSets", 0, "template", "spec", "containers"),
            f"{gpu_resource} is not whole: {shape.gpus}",
        )
    return shape, count


def _duration(
    succeeded: list[float] | None,
    conditions: dict[str, tuple[str, datetime, Path_]],
    finished: tuple[str, datetime, Path_],
    with_pods: bool,
) -> tuple[int, int] | str:
    """(seconds the job ran, 1 if that came from its conditions despite --pods), or why it has
    no duration: the longest succeeded pod's run, else Finished minus PodsReady (or Admitted)."""
    if succeeded:
        return _seconds(max(succeeded)), 0
    started = conditions.get("PodsReady")
    if started is None or started[0] != "True":
        started = conditions.get("Admitted")
    if started is None or started[0] != "True":
        return "Finished with no Admitted=True condition"
    return _seconds((finished[1] - started[1]).total_seconds()), int(with_pods)


def _per_pod(shape: Shape) -> str:
    """A trace job's perPod: GPUs always, CPU and memory where not the trace's defaults."""
    per_pod = [f"gpus: {shape.gpus.numerator}"]
    if shape.cpu and _cpu(shape.cpu) != DEFAULT_CPU:
        per_pod.append(f'cpu: "{_cpu(shape.cpu)}"')
    if shape.memory and _memory(shape.memory) != DEFAULT_MEMORY:
        per_pod.append(f"memory: {_memory(shape.memory)}")
    return "{" + ", ".join(per_pod) + "}"


def notes(converted: Converted, display: str) -> Iterator[str]:
    """What stderr says: how many were kept, and each reason a Workload was left out."""
    left = sum(len(v) for v in converted.left_out.values())
    yield f"{display}: {converted.kept} jobs from {converted.kept + left} Workloads"
    for reason, names in sorted(converted.left_out.items()):
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        yield f"  left out {len(names)} {reason}: {shown}"
    if converted.from_conditions:
        yield (
            f"  {converted.from_conditions} durations from the Workloads' conditions "
            "(no Succeeded pod of theirs in the pods file)"
        )
