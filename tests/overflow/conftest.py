"""Shared helpers: the rendered overflow objects of every shipped environment, and the gate
controller's own policy loader (gate/ is on sys.path through pytest's `pythonpath`)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

from generators.k8s.objects import Obj
from generators.layout import environment_names
from tests.support import ROOT

ENVIRONMENTS = environment_names(ROOT)


@cache
def rendered(env: str, component: str = "overflow") -> tuple[tuple[Path, Obj], ...]:
    """(file, object) for every file under rendered/<env>/<component>/, sorted by path."""
    folder = ROOT / "rendered" / env / component
    return tuple(
        (path, yaml.safe_load(path.read_text(encoding="utf-8"))) for path in sorted(folder.rglob("*.yaml"))
    )


def objects(env: str, kind: str | None = None) -> list[Obj]:
    return [obj for _, obj in rendered(env) if kind is None or obj["kind"] == kind]


def one(env: str, kind: str, name: str) -> Obj:
    found = [obj for obj in objects(env, kind) if obj["metadata"]["name"] == name]
    assert len(found) == 1, f"{env}: expected one {kind}/{name}, found {len(found)}"
    return found[0]


def overflow_envs() -> list[str]:
    """Shipped environments that render overflow objects."""
    return [env for env in ENVIRONMENTS if rendered(env)]
