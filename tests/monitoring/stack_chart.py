"""kube-prometheus-stack as `helm template` renders it with an environment's values.

The chart and its version are generators/upstream/charts.py's KUBE_PROMETHEUS_STACK (the
archive in ../shared/charts, verified by tools.toolchain.archive_path), the release and
namespace the spec's `monitoring.release` and `monitoring.namespace`: the same release the
header command of rendered/<env>/installers/kube-prometheus-stack-values.yaml upgrades, so
object names
(`<release>-kube-state-metrics`, ...) are the cluster's.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import yaml

from box.charts import template_argv
from generators.k8s.objects import Obj
from generators.model.load import load_environment
from generators.upstream.charts import KUBE_PROMETHEUS_STACK, Chart
from tests.support import ROOT, archive, tool

CHART = KUBE_PROMETHEUS_STACK.archive
# kube-state-metrics' and node-exporter's templates in the chart's output.
KSM_SOURCE = "kube-prometheus-stack/charts/kube-state-metrics/templates/"
NODE_EXPORTER_SOURCE = "kube-prometheus-stack/charts/prometheus-node-exporter/templates/"

HELM_HOMES = ("CACHE", "CONFIG", "DATA")


def values_file(env: str) -> Path:
    return ROOT / "rendered" / env / "installers" / "kube-prometheus-stack-values.yaml"


@dataclass(frozen=True)
class Rendered:
    """The chart's objects, with the template each came from."""

    release: str
    namespace: str
    objects: list[tuple[str, Obj]]  # (# Source: path, object)

    def one(self, source_prefix: str, kind: str) -> Obj:
        found = [o for s, o in self.objects if s.startswith(source_prefix) and o["kind"] == kind]
        assert len(found) == 1, f"{len(found)} {kind} from {source_prefix}"
        return found[0]


@cache
def _helm_home() -> Path:
    return Path(tempfile.mkdtemp(prefix="trainyard-helm-"))


def scratch_file(name: str) -> Path:
    """A path in this session's scratch folder (beside helm's empty homes)."""
    return _helm_home() / name


def helm_template(chart: Chart, namespace: str, values: Path | None) -> str:
    """`helm template` of pinned chart `chart` as its release in `namespace` with `values`: the
    documents, each with its `# Source:` line. Helm runs with empty homes: no repository,
    plugin or user config."""
    argv = template_argv(tool("helm"), archive(chart.archive), chart.release, namespace, values)
    home = _helm_home()
    isolated = {**os.environ, **{f"HELM_{kind}_HOME": str(home / kind.lower()) for kind in HELM_HOMES}}
    done = subprocess.run(argv, capture_output=True, text=True, env=isolated, timeout=120, check=False)
    assert done.returncode == 0, f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}"
    return done.stdout


def render(env: str, values: Path | None = None) -> Rendered:
    """`helm template` of the pinned chart with `values` (default: rendered/<env>/installers')."""
    monitoring = load_environment(ROOT, env)[1]["monitoring"]
    namespace, chart = monitoring["namespace"], replace(KUBE_PROMETHEUS_STACK, release=monitoring["release"])
    text = helm_template(chart, namespace, values or values_file(env))
    objects = []
    for document in text.split("\n---"):
        source = re.search(r"^# Source: (\S+)", document, re.MULTILINE)
        body = yaml.safe_load(document)
        if isinstance(body, dict) and source:
            objects.append((source[1], body))
    return Rendered(chart.release, namespace, objects)
