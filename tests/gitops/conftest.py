"""Shared fixtures: the rendered tree per environment and the workflow files, as data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from generators.k8s.objects import Obj
from generators.layout import environment_names, is_installer_input
from tests.support import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"
ENVIRONMENTS = environment_names(ROOT)


def rendered_files(env: str) -> dict[str, Any]:
    """Every YAML file of rendered/<env>/ as committed: path relative to it -> document."""
    base = ROOT / "rendered" / env
    return {
        p.relative_to(base).as_posix(): yaml.load(p.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        for p in sorted(base.rglob("*.yaml"))
    }


def rendered_objects(env: str) -> dict[str, Obj]:
    """The Kubernetes objects of rendered/<env>/ as committed: every file but the installer
    inputs (installers/, e.g. the Kueue chart's values), which are documents for another
    installer; test_argocd checks that the Application excludes them."""
    return {path: doc for path, doc in rendered_files(env).items() if not is_installer_input(path)}


def load_yaml(path: Path) -> Any:
    """YAML as GitHub reads it: YAML 1.1 turns the key `on` into True; put it back."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    if isinstance(document, dict) and True in document:
        document["on"] = document.pop(True)
    return document


@pytest.fixture(params=ENVIRONMENTS)
def env(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name
