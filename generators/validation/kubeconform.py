"""Run the pinned kubeconform over manifests with our offline schemas; parse its findings.

Always -strict and never -ignore-missing-schemas: an object without a schema is a finding.
kubeconform drops a schema that fails to compile and then calls it missing, and reports
nothing at all for documents it does not see, so we also count the objects ourselves and
report any difference, per file.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import yaml

from generators.layout import is_installer_input
from generators.validation.schemastore import normalize_kubernetes_version, strict_dir_name
from tools.toolchain import tool_path

WORKERS: Final = 2  # the CI machine has 2 cores
MANIFEST_SUFFIXES: Final = (".yaml", ".yml", ".json")
Status = Literal["invalid", "error", "skipped", "uncounted"]
_STATUS: Final[dict[str, Status | None]] = {
    "statusValid": None,
    "statusInvalid": "invalid",
    "statusError": "error",
    "statusSkipped": "skipped",
}
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class KubeconformFailed(RuntimeError):
    """kubeconform did not run to completion (bad flags, crash, timeout, garbled output)."""


@dataclass(frozen=True, order=True)
class Finding:
    """One problem with one object (or one file, for uncounted objects)."""

    file: str
    kind: str
    name: str
    check: str  # kubeconform/invalid, kubeconform/no-schema, kubeconform/error, ...
    message: str
    status: Status
    api_version: str = ""
    field: str = ""  # JSON pointer of the offending value, "" for the whole object

    def line(self) -> str:
        """`<file>: <kind>/<name>: <check>: <message>`, the validate command's format."""
        where = f"{self.field}: " if self.field else ""
        return f"{self.file}: {self.kind}/{self.name}: {self.check}: {where}{self.message}"


@dataclass(frozen=True)
class KubeconformResult:
    """Findings (sorted) and kubeconform's own counts for one run."""

    findings: tuple[Finding, ...]
    valid: int
    invalid: int
    errors: int
    skipped: int
    expected: int  # objects we passed, counted by us
    seconds: float
    statuses: tuple[tuple[str, str], ...] = ()  # (file, kubeconform status) per object listed
    expected_by_file: tuple[tuple[str, int], ...] = ()  # objects we passed, per file

    @property
    def counted(self) -> int:
        """Objects kubeconform validated or failed to validate."""
        return self.valid + self.invalid + self.errors

    @property
    def ok(self) -> bool:
        """True when every object we passed was validated and found valid."""
        return not self.findings


def manifest_files(paths: Iterable[Path]) -> list[Path]:
    """Files kubeconform would read: the given files, and manifests under given dirs (an
    environment's folder, rendered/<env>), except its installers/ folder: installer inputs
    such as the Kueue chart's values are not Kubernetes objects (generators/layout.py)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = (
                p
                for p in path.rglob("*")
                if p.suffix.lower() in MANIFEST_SUFFIXES
                and not is_installer_input(p.relative_to(path).as_posix())
            )
            files.extend(sorted(p for p in found if p.is_file()))
        else:
            files.append(path)
    return files


def count_objects(files: Sequence[Path]) -> dict[str, int]:
    """Objects per file as kubeconform sees them: non-empty documents, List items split."""
    counts: dict[str, int] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        try:
            documents = [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
        except yaml.YAMLError:  # kubeconform reports it; count its document split
            documents = [c for c in ("\n" + text).split("\n---") if c.strip()]
        counts[str(path)] = sum(_items(d) for d in documents)
    return counts


def _items(document: object) -> int:
    if isinstance(document, dict) and str(document.get("kind", "")).lower() == "list":
        items = document.get("items") or []
        return len(items) if isinstance(items, list) else 0
    return 1


def run_kubeconform(
    paths: list[Path],
    kubernetes_version: str,
    schema_dir: Path,
    *,
    expected: Mapping[str, int] | None = None,
    timeout: float = 300.0,
) -> KubeconformResult:
    """Validate the manifests in paths (files or directories) against schema_dir.

    schema_dir is what schemastore.ensure_schemas() returned for the same Kubernetes
    version. `expected` (objects per file, keyed by str(path) of manifest_files(paths))
    skips our own count when the caller knows it.
    Raises ToolNotInstalled if the pinned binary is missing, KubeconformFailed if it crashes.
    """
    version = normalize_kubernetes_version(kubernetes_version)
    if not (schema_dir / strict_dir_name(version)).is_dir():
        raise KubeconformFailed(f"{schema_dir} has no {strict_dir_name(version)}/ schemas")
    files = manifest_files(paths)
    per_file = dict(expected) if expected is not None else count_objects(files)
    if not files:
        return KubeconformResult((), 0, 0, 0, 0, 0, 0.0)
    command = [
        str(tool_path("kubeconform")),
        *("-strict", "-summary", "-verbose", "-output", "json"),
        *("-n", str(WORKERS), "-kubernetes-version", version),
        *("-schema-location", str(schema_dir)),
        *(str(f) for f in files),
    ]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise KubeconformFailed(f"kubeconform timed out after {timeout:.0f}s") from error
    seconds = time.perf_counter() - started
    try:
        report = json.loads(done.stdout)
        summary = report["summary"]
    except (ValueError, KeyError, TypeError) as error:
        raise KubeconformFailed(
            f"kubeconform exited {done.returncode} without a JSON report: "
            f"{(done.stderr or done.stdout).strip()[:2000]}"
        ) from error
    resources = [r for r in report.get("resources", []) if r.get("status") in _STATUS]
    if len(resources) != sum(int(summary[k]) for k in ("valid", "invalid", "errors", "skipped")):
        raise KubeconformFailed(f"kubeconform listed {len(resources)} results for {summary}")
    findings = [f for r in resources for f in _findings(r)]
    findings += _uncounted(resources, per_file)
    return KubeconformResult(
        findings=tuple(sorted(findings)),
        valid=int(summary["valid"]),
        invalid=int(summary["invalid"]),
        errors=int(summary["errors"]),
        skipped=int(summary["skipped"]),
        expected=sum(per_file.values()),
        seconds=seconds,
        statuses=tuple((str(r.get("filename", "")), str(r["status"])) for r in resources),
        expected_by_file=tuple(sorted(per_file.items())),
    )


def part(result: KubeconformResult, folder: Path) -> KubeconformResult:
    """The share of a run over several folders that concerns the files under `folder` (one
    run over many environments costs one start and one schema load instead of many)."""
    prefix = f"{folder}{os.sep}"
    statuses = tuple((file, status) for file, status in result.statuses if file.startswith(prefix))
    counts = Counter(status for _, status in statuses)
    expected_by_file = tuple((file, n) for file, n in result.expected_by_file if file.startswith(prefix))
    expected = sum(n for _, n in expected_by_file)
    return KubeconformResult(
        findings=tuple(f for f in result.findings if f.file.startswith(prefix)),
        valid=counts["statusValid"],
        invalid=counts["statusInvalid"],
        errors=counts["statusError"],
        skipped=counts["statusSkipped"],
        expected=expected,
        seconds=result.seconds * expected / result.expected if result.expected else 0.0,
        statuses=statuses,
        expected_by_file=expected_by_file,
    )


def _findings(resource: Mapping[str, Any]) -> list[Finding]:
    status = _STATUS[resource["status"]]
    if status is None:
        return []
    base = {
        "file": str(resource.get("filename", "")),
        "kind": str(resource.get("kind", "")),
        "name": str(resource.get("name", "")),
        "api_version": str(resource.get("version", "")),
    }
    message = str(resource.get("msg", ""))
    if status == "invalid":
        errors = resource.get("validationErrors") or [{"path": "", "msg": message}]
        return [
            Finding(
                **base,
                check="kubeconform/invalid",
                status="invalid",
                message=str(e.get("msg", "")),
                field=str(e.get("path", "")),
            )
            for e in errors
        ]
    if status == "error" and message.startswith("could not find schema for"):
        message = f"no schema for {base['api_version']} {base['kind']} (is its CRD pinned?)"
        return [Finding(**base, check="kubeconform/no-schema", status="error", message=message)]
    if status == "skipped":
        message = message or "skipped by kubeconform"
    return [Finding(**base, check=f"kubeconform/{status}", status=status, message=message)]


def _uncounted(resources: Sequence[Mapping[str, Any]], per_file: Mapping[str, int]) -> list[Finding]:
    """A finding per file where kubeconform accounted for fewer or more objects than we see."""
    seen = Counter(str(r.get("filename", "")) for r in resources)
    findings = []
    for file in sorted(set(per_file) | set(seen)):
        if file and seen[file] != per_file.get(file, 0):
            message = (
                f"kubeconform accounted for {seen[file]} object(s), the file holds "
                f"{per_file.get(file, 0)}: a schema may have failed to compile or a "
                "document was not parsed"
            )
            findings.append(Finding(file, "", "", "kubeconform/uncounted", message, "uncounted"))
    return findings
