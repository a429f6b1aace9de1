"""generators/gitops/permissions.py: the render refuses what Argo CD v3.5.1 would refuse (a kind
its AppProject does not whitelist, a namespace outside its destinations, a repository outside
its sourceRepos, an Application path that applies no rendered file), one line per reason at
the rendered file, nothing written. The rules are pinned to Argo CD's source in the module's
docstring; the expectations here are literals read off those lines."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from generators.components import argocd, registry
from generators.errors import SpecError
from generators.gitops import permissions, syncwaves
from generators.gitops.argoglob import literal, matches
from generators.k8s.objects import Obj
from generators.model.load import load
from generators.pipeline import render
from tests.support import CORPUS, ROOT
from tests.support.scratch import repo_with, run_cli, tree_digest

APP = "argocd/argocd/application-trainyard-prod.yaml"
PROJECT = "argocd/argocd/appproject-trainyard-prod.yaml"


def _prod() -> list[permissions.File]:
    return [permissions.File(f.path, f.obj) for f in render.render_tree(load(ROOT, "prod"))]


def _project(files: list[permissions.File]) -> Obj:
    return next(f.obj for f in files if f.path == PROJECT)


def _lines(files: list[permissions.File]) -> list[str]:
    return [p.format() for p in permissions.refusals("prod", files)]


def test_the_shipped_environments_have_nothing_argo_cd_would_refuse() -> None:
    for env in ("dev", "staging", "prod"):
        files = [permissions.File(f.path, f.obj) for f in render.render_tree(load(ROOT, env))]
        assert permissions.refusals(env, files) == []


def test_a_kind_missing_from_the_whitelist_is_refused_once_at_its_first_file() -> None:
    files = copy.deepcopy(_prod())
    spec = _project(files)["spec"]
    spec["namespaceResourceWhitelist"] = [
        i for i in spec["namespaceResourceWhitelist"] if i["kind"] != "LocalQueue"
    ]
    [line] = _lines(files)
    first = sorted(f.path for f in files if f.obj.get("kind") == "LocalQueue")[0]
    assert line.startswith(
        f"rendered/prod/{first}:1:1: error: "
        "kueue.x-k8s.io/LocalQueue is not in project trainyard-prod's whitelist"
    )


def test_an_empty_namespaced_whitelist_allows_nothing_but_a_missing_one_everything() -> None:
    """app_project_types.go:405-407: `nil` passes every namespaced kind, `[]` none."""
    project: Obj = {"spec": {"namespaceResourceWhitelist": []}}
    assert not permissions.kind_permitted(project, "apps", "Deployment", "x", namespaced=True)
    assert permissions.kind_permitted({"spec": {}}, "apps", "Deployment", "x", namespaced=True)
    assert not permissions.kind_permitted({"spec": {}}, "", "Namespace", "x", namespaced=False)


def test_a_namespace_outside_the_destinations_is_refused() -> None:
    files = copy.deepcopy(_prod())
    _project(files)["spec"]["destinations"][0]["namespace"] = "kueue-*"
    lines = _lines(files)
    assert any(
        " namespace serving-prod is not in project trainyard-prod's destinations" in line for line in lines
    )
    assert all("namespace kueue-system " not in line for line in lines)  # the glob matches it


def test_a_destination_namespace_does_not_make_cluster_scoped_objects_namespaced() -> None:
    """With the Application's destination in a namespace, Argo CD v3.5.1 still reads each
    object's scope from discovery: the real Argo CD on the box refused only the namespaces
    (tests/box/test_scene_argocd.py), none of the cluster-scoped kinds. The render reads the
    scope off metadata.namespace, so a ClusterQueue stays cluster-scoped."""
    files = copy.deepcopy(_prod())
    project = _project(files)["spec"]
    project["destinations"] = [{**project["destinations"][0], "namespace": "kueue-*"}]
    next(f.obj for f in files if f.path == APP)["spec"]["destination"]["namespace"] = "kueue-system"
    lines = _lines(files)
    assert [line for line in lines if "whitelist" in line] == []
    assert any(
        " namespace serving-prod is not in project trainyard-prod's destinations" in line for line in lines
    )


def test_a_repository_outside_source_repos_is_refused_at_the_application() -> None:
    files = copy.deepcopy(_prod())
    _project(files)["spec"]["sourceRepos"] = ["https://github.com/other/*"]
    assert _lines(files) == [
        f"rendered/prod/{APP}:1:1: error: Application trainyard-prod: repo "
        "https://github.com/example/trainyard.git is not permitted in project trainyard-prod; "
        + permissions.HINT
    ]


def test_source_repos_match_as_argo_cd_normalises_them() -> None:
    """Lower-cased, `.git` trimmed, `*` stops at `/` (util/git/git.go:63-80, app_project_types.go:474)."""
    project = {"spec": {"sourceRepos": ["https://GitHub.com/example/*"]}}
    assert permissions.source_permitted(project, "https://github.com/example/trainyard.git")
    assert not permissions.source_permitted(project, "https://github.com/example/deep/trainyard.git")
    denied = {"spec": {"sourceRepos": ["https://github.com/a/*", "!https://github.com/a/b"]}}
    assert not permissions.source_permitted(denied, "https://github.com/a/b")
    assert permissions.source_permitted(denied, "https://github.com/a/c")


def test_an_ipv6_destination_server_is_escaped_so_it_matches_itself() -> None:
    """gobwas reads `[fd00::1]` as a character class: unescaped, the project would refuse
    every object of the environment."""
    server = "https://[fd00::1]:6443"
    assert not matches(server, server)
    assert matches(literal(server), server)
    files = copy.deepcopy(_prod())
    for f in files:
        if f.obj.get("kind") == "Application" and f.path == APP:
            f.obj["spec"]["destination"]["server"] = server
    _project(files)["spec"]["destinations"][0]["server"] = server
    assert any("destination https://[fd00::1]:6443 not permitted" in line for line in _lines(files))
    _project(files)["spec"]["destinations"][0]["server"] = literal(server)
    assert _lines(files) == []


def test_an_application_path_that_applies_nothing_stops_the_render(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generator pointing the Application at a folder it does not render: one line at the
    Application's file, exit 1, nothing written."""
    root = repo_with(tmp_path, (CORPUS / "valid-minimal.yaml").read_text())
    monkeypatch.setattr(argocd, "RENDERED", "rendred")
    before = tree_digest(root / "rendered")
    code, _, err = run_cli(root, "render", "bad")
    assert code == 1
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if ": error: " in line]  # the example repoURL warns
    expected = [
        "rendered/bad/argocd/argocd/application-trainyard-bad.yaml:1:1: error: Application trainyard-bad: "
        "source path rendred/bad applies no rendered file",
        "rendered/bad/argocd/argocd/application-trainyard-bad-bootstrap.yaml:1:1: error: "
        "Application trainyard-bad-bootstrap: source path rendred/bad/argocd applies no rendered file",
    ]
    assert sorted(line.split(",")[0] for line in errors) == sorted(expected)
    assert tree_digest(root / "rendered") == before
    assert not (root / "rendered" / "bad").exists()


def test_an_ipv6_destination_renders_with_its_server_escaped_in_the_project(tmp_path: Path) -> None:
    text = (CORPUS / "valid-minimal.yaml").read_text()
    text = text.replace(
        'cluster: {kubernetesVersion: "1.36.2"}',
        'cluster: {kubernetesVersion: "1.36.2", argocd: {destinationServer: "https://[fd00::1]:6443"}}',
    )
    root = repo_with(tmp_path, text)
    code, _, err = run_cli(root, "render", "bad")
    assert code == 0, err
    project = (root / "rendered" / "bad" / "argocd" / "argocd" / "appproject-trainyard-bad.yaml").read_text()
    assert '- server: "https://\\\\[fd00::1\\\\]:6443"\n' in project  # YAML for https://\[fd00::1\]:6443


def test_a_kind_argo_cd_excludes_by_default_stops_the_render(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Lease is dropped from the targets with a warning (util/settings/resources_filter.go:10,
    controller/state.go:756-761): rendered, it would never be applied. Through the real
    pipeline (the whitelist derived from it as usual), so only the exclusion refuses it."""
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "held", "namespace": "ops"},
        "spec": {"holderIdentity": "x"},
    }
    components = tuple(
        registry.Component(c.name, lambda _env, _earlier: [lease]) if c.name == "namespaces" else c
        for c in registry.COMPONENTS
    )
    monkeypatch.setattr(render, "COMPONENTS", components)
    monkeypatch.setitem(syncwaves.WAVES, "Lease", 4)  # a wave, so that only the exclusion stops it
    with pytest.raises(SpecError) as caught:
        render.render_tree(load(ROOT, "dev"))
    assert [p.format() for p in caught.value.problems] == [
        "rendered/dev/namespaces/ops/lease-held.yaml:1:1: error: coordination.k8s.io/Lease is excluded by "
        "Argo CD's defaults: it would never apply it; " + permissions.HINT
    ]
