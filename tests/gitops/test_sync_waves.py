"""Every kind the generators render has a sync wave chosen for it (generators/gitops/syncwaves.py):
the apply order is a decision, so a new kind fails the render instead of silently landing in
some default wave."""

from __future__ import annotations

import pytest

from generators.components import registry
from generators.gitops import health, syncwaves
from generators.model.load import load
from generators.pipeline import render
from tests.support import ROOT

from .conftest import ENVIRONMENTS, rendered_objects


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_every_rendered_kind_has_its_own_wave(env: str) -> None:
    kinds = {obj["kind"] for obj in rendered_objects(env).values()}
    assert kinds, env
    assert kinds <= set(syncwaves.WAVES), sorted(kinds - set(syncwaves.WAVES))
    for obj in rendered_objects(env).values():
        annotation = obj["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]
        assert annotation == str(syncwaves.WAVES[obj["kind"]])


def test_a_kind_without_a_wave_stops_the_render(monkeypatch: pytest.MonkeyPatch) -> None:
    novel = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    only = registry.Component("namespaces", lambda _env, _earlier: [novel])
    monkeypatch.setattr(render, "COMPONENTS", (only,))
    expected = r"^kind Gadget has no Argo CD sync wave: add it to generators/gitops/syncwaves\.py"
    with pytest.raises(ValueError, match=expected):
        render.render_environment(load(ROOT, "dev"))


def test_the_last_wave_holds_exactly_the_kinds_argo_cd_must_not_wait_on() -> None:
    """Argo CD never waits on an operation's last wave (gitops-engine sync_context.go:703-712):
    only kinds whose health comes from outside the Application may go there, and all do."""
    last = max(syncwaves.WAVES.values())
    assert {k for k, w in syncwaves.WAVES.items() if w == last} == health.KINDS
    assert syncwaves.WAVES["HorizontalPodAutoscaler"] > syncwaves.WAVES["APIService"]
