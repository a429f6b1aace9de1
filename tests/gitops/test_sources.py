"""generators/gitops/sources.py: the files a directory source applies, as Argo CD v3.5.1's repo
server walks them (reposerver/repository/repository.go:1965, :2112-2164, :2185-2230)."""

from __future__ import annotations

from generators.gitops.sources import applied

PATHS = [
    "rendered/prod/argocd/argocd/application-a.yaml",
    "rendered/prod/installers/kueue-values.yaml",
    "rendered/prod/kueue/clusterqueue-a.yaml",
    "rendered/prod/kueue/README.md",
    "rendered/prod/top.yaml",
    "rendered/production/kueue/clusterqueue-b.yaml",
]


def test_recursive_source_minus_the_excluded_folders() -> None:
    source = {"path": "rendered/prod", "directory": {"recurse": True, "exclude": "{argocd/*,installers/*}"}}
    assert applied(source, PATHS) == ["rendered/prod/kueue/clusterqueue-a.yaml", "rendered/prod/top.yaml"]


def test_without_recurse_only_the_folder_itself() -> None:
    assert applied({"path": "rendered/prod"}, PATHS) == ["rendered/prod/top.yaml"]


def test_include_keeps_only_what_it_matches() -> None:
    source = {"path": "rendered/prod/", "directory": {"recurse": True, "include": "kueue/*"}}
    assert applied(source, PATHS) == ["rendered/prod/kueue/clusterqueue-a.yaml"]


def test_a_path_that_holds_no_rendered_file_applies_nothing() -> None:
    assert applied({"path": "rendered/staging", "directory": {"recurse": True}}, PATHS) == []
