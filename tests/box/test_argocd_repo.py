"""box/argocd_repo.py: the repository Argo CD reads in the box is the render of the spec with
only the repository URL and the destination pointed at the box. Expected values: the spec's
(environments/staging.yaml, environments/_defaults.yaml), as literals."""

from __future__ import annotations

from pathlib import Path

import yaml

from box.argocd_repo import create, git, pointed_spec
from tests.support import ROOT


def test_pointed_spec_sets_the_two_urls_and_keeps_the_rest() -> None:
    text = (ROOT / "environments" / "staging.yaml").read_text(encoding="utf-8")
    pointed = yaml.safe_load(
        pointed_spec(text, "file:///r.git", "https://127.0.0.1:1", "environments/staging.yaml")
    )
    assert pointed["cluster"]["argocd"] == {
        "destinationServer": "https://127.0.0.1:1",
        "syncPolicy": "automated",
        "repoURL": "file:///r.git",
    }
    original = yaml.safe_load(text)
    assert {k: v for k, v in pointed.items() if k != "cluster"} == {
        k: v for k, v in original.items() if k != "cluster"
    }


def test_the_box_repository_holds_the_render_pointed_at_the_box(tmp_path: Path) -> None:
    repo, _, files = create(ROOT, "staging", 1, 1, tmp_path / "repo", "main", "https://127.0.0.1:6443")
    assert git(repo.bare, "branch", "--list").split() == ["*", "main"]  # targetRevision: main
    listed = set(git(repo.bare, "ls-tree", "-r", "--name-only", "main").split())
    ours = {f"rendered/staging/{f.path}" for f in files}
    assert ours <= listed and "environments/staging.yaml" in listed
    committed = {
        p.relative_to(ROOT).as_posix() for p in (ROOT / "rendered/staging").rglob("*") if p.is_file()
    }
    assert ours == committed  # the same files as the checkout's rendered/staging/
    app = next(
        f.obj
        for f in files
        if f.obj.get("kind") == "Application" and f.obj["metadata"]["name"] == "trainyard-staging"
    )
    assert app["spec"]["source"]["repoURL"] == repo.url == (tmp_path / "repo" / "repo.git").as_uri()
    assert app["spec"]["destination"]["server"] == "https://127.0.0.1:6443"
    # every other rendered file is byte for byte the checkout's
    differing = [
        f.path for f in files if f.text != (ROOT / "rendered/staging" / f.path).read_text(encoding="utf-8")
    ]
    assert sorted(differing) == [
        "argocd/argocd/application-trainyard-staging-bootstrap.yaml",
        "argocd/argocd/application-trainyard-staging.yaml",
        "argocd/argocd/appproject-trainyard-staging-bootstrap.yaml",
        "argocd/argocd/appproject-trainyard-staging.yaml",
    ]
