"""Shared fixtures: the shipped environments (spec values and model), their rendered
monitoring objects, and the pinned promtool / prometheus binaries."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from generators.layout import environment_names
from generators.model.build import build
from generators.model.environment import Environment
from generators.model.load import load_environment
from tests.support import ROOT, tool

ENVIRONMENTS = environment_names(ROOT)


@dataclass(frozen=True)
class Shipped:
    name: str
    spec: dict[str, Any]  # the validated, defaulted environment file: the values people wrote
    env: Environment
    objects: list[dict[str, Any]]  # rendered/<env>/monitoring/**, as committed

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def named(self, kind: str, name: str) -> dict[str, Any]:
        return next(o for o in self.of_kind(kind) if o["metadata"]["name"] == name)


def load_shipped(name: str) -> Shipped:
    _, spec = load_environment(ROOT, name)
    env = build(spec, f"environments/{name}.yaml")
    folder = ROOT / "rendered" / name / "monitoring"
    objects = [yaml.safe_load(p.read_text()) for p in sorted(folder.rglob("*.yaml"))]
    return Shipped(name, spec, env, objects)


@pytest.fixture(scope="session", params=ENVIRONMENTS)
def shipped(request: pytest.FixtureRequest) -> Shipped:
    return load_shipped(request.param)


@pytest.fixture(scope="session")
def promtool() -> Path:
    return tool("promtool")


@pytest.fixture(scope="session")
def prometheus_binary() -> Path:
    return tool("prometheus")


DCGM_CSV_READER = Path(__file__).parent / "dcgmcsv" / "main.go"


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dcgm-exporter CSV reader (tests/monitoring/dcgmcsv: its parsing, in Go), built."""
    go = shutil.which("go")
    assert go, "Go is needed to build the dcgm-exporter CSV reader (it builds the pinned tools too)"
    binary = tmp_path_factory.mktemp("dcgmcsv") / "dcgmcsv"
    subprocess.run(
        [go, "build", "-o", str(binary), str(DCGM_CSV_READER)],
        check=True,
        capture_output=True,
        env={**os.environ, "GO111MODULE": "off"},
    )
    return binary
