"""kube-prometheus-stack 88.5.3 as `helm template` renders it with an environment's values.

The pinned chart archive (../shared/charts, verified by tools.toolchain.archive_path) and
the pinned helm; release name and namespace are the ones of the helm command in the header
of rendered/<env>/installers/kube-prometheus-stack-values.yaml, read from that header, so
object names (`<release>-kube-state-metrics`, ...) are the cluster's.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tools.toolchain import PINS, archive_path, tool_path

ROOT = Path(__file__).resolve().parents[2]
CHART = "kube-prometheus-stack-88.5.3.tgz"
# The apiserver the tests run; helm's Capabilities.KubeVersion gates some templates.
KUBE_VERSION = PINS["kube-apiserver"].removeprefix("v")
# kube-state-metrics' and node-exporter's templates in the chart's output.
KSM_SOURCE = "kube-prometheus-stack/charts/kube-state-metrics/templates/"
NODE_EXPORTER_SOURCE = "kube-prometheus-stack/charts/prometheus-node-exporter/templates/"

Obj = dict[str, Any]


def values_file(env: str) -> Path:
    return ROOT / "rendered" / env / "installers" / "kube-prometheus-stack-values.yaml"


def release_of(values: Path) -> tuple[str, str]:
    """(release, namespace) of the `helm upgrade <release> <chart> -n <namespace>` in the header."""
    header = "\n".join(line.lstrip("# ") for line in values.read_text(encoding="utf-8").splitlines()
                       if line.startswith("#"))  # fmt: skip
    found = re.search(r"helm upgrade (\S+) \S+\s*\\?\s*-n (\S+)", header)
    assert found, f"{values}: no 'helm upgrade <release> <chart> -n <namespace>' in its header"
    return found[1], found[2]


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


def render(env: str) -> Rendered:
    """`helm template` of the pinned chart with rendered/<env>/installers' values."""
    values = values_file(env)
    release, namespace = release_of(values)
    argv = [str(tool_path("helm")), "template", release, str(archive_path(CHART)), "--namespace", namespace,
            "--kube-version", KUBE_VERSION, "-f", str(values)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"helm template failed ({done.returncode}):\n{done.stderr[-3000:]}"
    objects = []
    for document in done.stdout.split("\n---"):
        source = re.search(r"^# Source: (\S+)", document, re.MULTILINE)
        body = yaml.safe_load(document)
        if isinstance(body, dict) and source:
            objects.append((source[1], body))
    return Rendered(release, namespace, objects)
