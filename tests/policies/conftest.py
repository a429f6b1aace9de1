"""A temporary copy of the repository's environments and rendered trees to break on purpose,
and `validate` run in-process against it (real kubeconform, real schemas, real policies)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from generators import cli
from generators.output import yamlemit
from tests.support import tool
from tests.support.scratch import copy_repo

DEV = "rendered/dev"
STAGING = "rendered/staging"


@dataclass
class Run:
    code: int
    out: str
    err: str = ""

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()

    def findings(self, policy: str) -> list[str]:
        """Finding lines of one policy id."""
        return [line for line in self.lines if f": {policy}: " in line]

    def json(self) -> Any:
        return json.loads(self.out)


class Repo:
    """environments/ and rendered/ of the real repository, copied; code comes from the repo."""

    def __init__(self, root: Path) -> None:
        self.root = copy_repo(root)

    def load(self, rel: str) -> dict[str, Any]:
        loaded: dict[str, Any] = yaml.safe_load((self.root / rel).read_text())
        return loaded

    def write(self, rel: str, obj: dict[str, Any]) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yamlemit.dump(obj), encoding="utf-8")

    def edit(self, rel: str, change: Callable[[dict[str, Any]], None]) -> None:
        obj = self.load(rel)
        change(obj)
        self.write(rel, obj)


Validate = Callable[..., Run]


def problems(run: Run) -> list[str]:
    """Finding lines other than staleness (every fixture edits a rendered file)."""
    return [
        line
        for line in run.lines
        if line.startswith(("rendered/", "environments/")) and ": stale: " not in line
    ]


def expect(run: Run, *lines: str) -> None:
    assert run.code == 1, run.out
    assert problems(run) == sorted(lines), run.out


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path)


@pytest.fixture
def validate(capsys: pytest.CaptureFixture[str]) -> Validate:
    def run(root: Path, *argv: str) -> Run:
        capsys.readouterr()
        code = cli.main(["-C", str(root), "validate", *argv])
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


@pytest.fixture(scope="session", autouse=True)
def kubeconform_installed() -> None:
    """Every validate run uses the pinned kubeconform: fail with the install command."""
    tool("kubeconform")


def labels(component: str, env: str = "dev") -> dict[str, str]:
    return {
        "app.kubernetes.io/managed-by": "trainyard",
        "trainyard.dev/environment": env,
        "trainyard.dev/component": component,
    }


def meta(
    name: str, component: str, wave: int, namespace: str | None = None, env: str = "dev"
) -> dict[str, Any]:
    """metadata as render.py decorates it."""
    out: dict[str, Any] = {"name": name}
    if namespace:
        out["namespace"] = namespace
    out["labels"] = labels(component, env)
    out["annotations"] = {"argocd.argoproj.io/sync-wave": str(wave)}
    return out


def hardened_deployment(name: str, namespace: str, env: str = "dev") -> dict[str, Any]:
    """A Deployment that passes kubeconform and every policy; tests break one thing."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(name, "fixture", 5, namespace, env),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": name}},
                "spec": {
                    "securityContext": {"runAsNonRoot": True},
                    "containers": [
                        {
                            "name": name,
                            "image": f"ghcr.io/example/{name}:1.2.3",
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                            },
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "64Mi"},
                                "limits": {"memory": "128Mi"},
                            },
                        }
                    ],
                },
            },
        },
    }
