"""Everything `generate.py validate` checks for one environment, as sorted findings.

1. the environment file (schema + semantics: the same load as render);
2. rendered/<env> is what that file renders today (not stale, nothing missing or extra);
3. kubeconform -strict against the offline schemas for the environment's Kubernetes
   version, with every object accounted for;
4. every policy in policies/;
5. promtool check rules over every rule group shipped.
Steps 1, 2, 4 and 5 run per environment in a process pool (one environment per task);
kubeconform then runs over batches of environments on worker threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generators.errors import SpecError
from generators.layout import RENDERED, unknown_dirs
from generators.model.environment import Environment
from generators.model.load import load
from generators.pipeline import fleet, render
from generators.speedups.parsereuse import rendered_objects
from generators.validation import kubeconform as kc
from generators.validation import promtool
from generators.validation.schemastore import ensure_schemas
from policies import registry, run_all
from policies.context import Context, Finding, RenderedObject, read_objects

KUBECONFORM = "kubeconform"
STALE = "stale"
SPEC = "spec"


@dataclass(frozen=True)
class KubeconformCounts:
    valid: int = 0
    invalid: int = 0
    errors: int = 0
    skipped: int = 0
    expected: int = 0


@dataclass(frozen=True)
class EnvironmentReport:
    name: str
    objects: int
    findings: tuple[Finding, ...]
    kubeconform: KubeconformCounts
    policies: int
    rule_files: int
    rules: int
    seconds: float  # this environment's own work, kubeconform's run included

    @property
    def errors(self) -> int:
        return sum(f.severity == "error" for f in self.findings)

    @property
    def warnings(self) -> int:
        return sum(f.severity == "warning" for f in self.findings)


_SCHEMA_DIRS: dict[str, Path] = {}
_SCHEMA_LOCK = threading.Lock()


def schema_dir(version: str) -> Path:
    """The schema set for a Kubernetes version, looked up (hashing the pinned inputs) once
    per process: kubeconform workers of two environments may ask at the same time."""
    with _SCHEMA_LOCK:
        if version not in _SCHEMA_DIRS:
            _SCHEMA_DIRS[version] = ensure_schemas(version)
        return _SCHEMA_DIRS[version]


@dataclass(frozen=True)
class _Checked:
    """One environment's Python checks and promtool, done in a worker: what kubeconform adds."""

    name: str
    base: Path
    kubernetes_version: str
    objects: int
    findings: tuple[Finding, ...]
    expected: dict[str, int]  # objects per manifest file, for kubeconform (empty: no files)
    rule_files: int
    rules: int
    seconds: float


# Environments per kubeconform run: each run costs a start and a schema load (~0.1 s); a
# few runs rather than one keep both cores busy (kubeconform -n 2 idles while it reads).
KUBECONFORM_BATCH = 10


class _Batches:
    """kubeconform runs over several environments of one Kubernetes version."""

    def __init__(self, submit: Callable[..., Future[Any]]) -> None:
        self.submit = submit
        self.pending: dict[str, list[_Checked]] = {}
        self.runs: dict[Path, Future[kc.KubeconformResult]] = {}

    def add(self, checked: _Checked) -> None:
        group = self.pending.setdefault(checked.kubernetes_version, [])
        group.append(checked)
        if len(group) >= KUBECONFORM_BATCH:
            self._run(checked.kubernetes_version)

    def flush(self) -> None:
        for version in list(self.pending):
            self._run(version)

    def _run(self, version: str) -> None:
        group = self.pending.pop(version, [])
        if group:
            expected = {file: n for c in group for file, n in c.expected.items()}
            run = self.submit(_kubeconform, [c.base for c in group], version, expected)
            self.runs.update({c.base: run for c in group})


def validate(root: Path, names: list[str]) -> list[EnvironmentReport]:
    """Reports for the named environments, in the given order. The Python checks (and
    promtool) of the environments run in a process pool (generators/pipeline/fleet.py), before any
    thread exists; then kubeconform, in batches, on worker threads."""
    registry()  # the policies, imported once before the workers fork
    checked = fleet.map_environments(check_environment, root, names)
    with ThreadPoolExecutor(max_workers=2) as pool:
        batches = _Batches(pool.submit)
        for item in checked:
            if isinstance(item, _Checked) and item.expected:
                batches.add(item)
        batches.flush()
        return [
            item if isinstance(item, EnvironmentReport) else _finish(root, item, batches.runs.get(item.base))
            for item in checked
        ]


def check_environment(root: Path, name: str) -> _Checked | EnvironmentReport:
    """Spec, staleness, policies and promtool for one environment (a report if the spec fails)."""
    began = time.perf_counter()
    try:
        env = load(root, name)
    except SpecError as error:
        problems = tuple(_spec_finding(p.format()) for p in error.problems)
        return EnvironmentReport(name, 0, problems, KubeconformCounts(), 0, 0, 0, time.perf_counter() - began)
    rendered = render.render_tree(env)  # installer inputs too: staleness covers them
    base = root / RENDERED / name
    files = kc.manifest_files([base]) if base.is_dir() else []
    # A committed file identical to today's rendering is not parsed again: its object is known.
    tree = read_objects(root, files, rendered_objects(name, rendered))
    # Our parse gives kubeconform its expected counts; only unparsable files are counted its way.
    expected = {**tree.counts, **kc.count_objects(tree.broken)} if files else {}
    findings = _stale(root, name, env, rendered, tree.objects)
    findings += run_all(Context(env, tuple(tree.objects)))
    rules = promtool.check_rules(promtool.rule_sources(tree.objects))
    findings += rules.findings
    return _Checked(
        name,
        base,
        env.kubernetes_version,
        len(tree.objects),
        tuple(findings),
        expected,
        rules.sources,
        rules.rules,
        time.perf_counter() - began,
    )


def _finish(
    root: Path, checked: _Checked, kubeconform: Future[kc.KubeconformResult] | None
) -> EnvironmentReport:
    findings = list(checked.findings)
    counts, kubeconform_findings, kubeconform_seconds = KubeconformCounts(), list[Finding](), 0.0
    if kubeconform is not None:
        counts, kubeconform_findings, kubeconform_seconds = _collect(kubeconform, root, checked.base)
    findings += kubeconform_findings
    return EnvironmentReport(
        checked.name,
        checked.objects,
        tuple(sorted(set(findings))),
        counts,
        len(registry()),
        checked.rule_files,
        checked.rules,
        checked.seconds + kubeconform_seconds,
    )


def orphan_dirs(root: Path, names: list[str]) -> list[Finding]:
    """rendered/<dir>/ without an environment file: Argo CD's directory generator would still
    deploy it. Only meaningful when every environment is validated."""
    return [
        Finding(
            line.rpartition(": ")[0],
            "",
            "",
            STALE,
            "no environments/*.yaml renders this directory; run: python generate.py render",
        )
        for line in unknown_dirs(root, set(names))
    ]


def _spec_finding(line: str) -> Finding:
    """`environments/x.yaml:3:5: error: msg` -> a finding printed the same way."""
    where, _, rest = line.partition(": error: ")
    return Finding(where, "", "", SPEC, rest)


def _stale(
    root: Path,
    name: str,
    env: Environment,
    files: list[render.RenderedFile],
    objects: list[RenderedObject],
) -> list[Finding]:
    """A finding per rendered file that differs from what the environment renders now."""
    wanted = {f"{RENDERED}/{name}/{f.path}": f.obj for f in files}
    on_disk = {o.path: o for o in objects}
    findings = []
    for line in render.stale(root, name, files):
        path, _, state = line.rpartition(": ")
        obj = wanted.get(path) or (on_disk[path].obj if path in on_disk else {})
        meta = obj.get("metadata") or {}
        message = {
            "stale": f"differs from what {env.source_file} renders",
            "missing": f"{env.source_file} renders it but it is not committed",
            "extra": f"{env.source_file} does not render it",
        }.get(state, state)
        findings.append(
            Finding(
                path,
                str(obj.get("kind", "")),
                str(meta.get("name", "")),
                STALE,
                f"{message}; run: python generate.py render {name}",
            )
        )
    return findings


def _kubeconform(bases: list[Path], version: str, expected: dict[str, int]) -> kc.KubeconformResult:
    return kc.run_kubeconform(bases, version, schema_dir(version), expected=expected)


def _collect(
    run: Future[kc.KubeconformResult], root: Path, base: Path
) -> tuple[KubeconformCounts, list[Finding], float]:
    shown = base.relative_to(root).as_posix()
    try:
        result = kc.part(run.result(), base)
    except Exception as error:  # no binary, no schemas, crash: validation did not happen
        return KubeconformCounts(), [Finding(shown, "", "", KUBECONFORM, f"did not run: {error}")], 0.0
    findings = [_kubeconform_finding(f, root) for f in result.findings]
    if result.counted != result.expected and not any(f.status == "uncounted" for f in result.findings):
        findings.append(
            Finding(shown, "", "", KUBECONFORM, f"validated {result.counted} objects of {result.expected}")
        )
    counts = KubeconformCounts(result.valid, result.invalid, result.errors, result.skipped, result.expected)
    return counts, findings, result.seconds


def _kubeconform_finding(finding: kc.Finding, root: Path) -> Finding:
    path = Path(finding.file)
    shown = path.relative_to(root).as_posix() if path.is_absolute() else finding.file
    what = finding.check.partition("/")[2] or finding.check
    where = f"{finding.field}: " if finding.field else ""
    return Finding(shown, finding.kind, finding.name, KUBECONFORM, f"{what}: {where}{finding.message}")
