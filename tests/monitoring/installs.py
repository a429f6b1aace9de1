"""One environment's three installs as helm renders them (kube-prometheus-stack, gpu-operator,
Kueue) with its rendered installer values, or the charts' defaults: `Env(name)` and the
`one`/`of_kind` lookups over the objects (tests/monitoring/test_charts.py, test_dcgm_csv.py)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import yaml

from generators.k8s.objects import Obj
from generators.upstream import charts
from tests.monitoring import stack_chart
from tests.support import ROOT


@cache
def helm_template(chart: charts.Chart, namespace: str, values: Path | None) -> tuple[Obj, ...]:
    text = stack_chart.helm_template(chart, namespace, values)
    return tuple(d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d)


def of_kind(objects: tuple[Obj, ...] | list[Obj], kind: str) -> list[Obj]:
    return [o for o in objects if o.get("kind") == kind]


def one(objects: tuple[Obj, ...] | list[Obj], kind: str, name: str | None = None) -> Obj:
    found = [o for o in of_kind(objects, kind) if name is None or o["metadata"]["name"] == name]
    assert len(found) == 1, f"{len(found)} {kind} {name or ''}"
    return found[0]


class Env:
    """One environment: its spec (the file, defaulted), its installer values, its rendered
    objects; under `root` (the checkout, or a scratch repository the test rendered)."""

    def __init__(self, name: str, root: Path = ROOT) -> None:
        from generators.model.load import load_environment

        self.name, self.root = name, root
        _, self.spec = load_environment(root, name)
        self.m = self.spec["monitoring"]
        self.installers = root / "rendered" / name / "installers"

    def values(self, file: str) -> Path:
        path = self.installers / file
        assert path.is_file(), f"{path} is not rendered"
        return path

    def rendered(self) -> Iterator[Obj]:
        for path in sorted((self.root / "rendered" / self.name).rglob("*.yaml")):
            if "installers" not in path.relative_to(self.root / "rendered" / self.name).parts:
                yield yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)

    def namespace_labels(self) -> dict[str, dict[str, str]]:
        return {
            o["metadata"]["name"]: o["metadata"].get("labels") or {}
            for o in self.rendered()
            if o["kind"] == "Namespace"
        }

    def job(self, exporter: str) -> str:
        """The job our queries select an exporter by (monitoring.selectors.<exporter>)."""
        found = re.fullmatch(r'job\s*=\s*"([^"]*)"', self.m["selectors"][exporter])
        assert found, self.m["selectors"][exporter]
        return found.group(1)

    # the three installs, with our values (or the charts' defaults)
    def kps(self, ours: bool = True) -> tuple[Obj, ...]:
        """The stack as the release and namespace the spec names (monitoring.release,
        monitoring.namespace)."""
        values = self.values("kube-prometheus-stack-values.yaml") if ours else None
        chart = dataclasses.replace(charts.KUBE_PROMETHEUS_STACK, release=self.m["release"])
        return helm_template(chart, self.m["namespace"], values)

    def gpu_operator(self, ours: bool = True) -> tuple[Obj, ...]:
        values = self.values("gpu-operator-values.yaml") if ours else None
        return helm_template(charts.GPU_OPERATOR, self.m["dcgmExporter"]["namespace"], values)

    def kueue(self, ours: bool = True) -> tuple[Obj, ...]:
        values = self.values("kueue-values.yaml") if ours else None
        return helm_template(charts.KUEUE, self.spec["kueue"]["namespace"], values)
