"""generators/layout.py: where things live in a checkout, on a scratch directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from generators.layout import cache_dir, environment_names, is_installer_input, unknown_dirs


def test_environment_names_skip_bases_and_other_files(tmp_path: Path) -> None:
    (tmp_path / "environments").mkdir()
    for name in ("prod.yaml", "dev.yaml", "_base.yaml", "notes.md"):
        (tmp_path / "environments" / name).write_text("")
    assert environment_names(tmp_path) == ["dev", "prod"]


def test_unknown_dirs_name_only_folders_no_environment_renders(tmp_path: Path) -> None:
    assert unknown_dirs(tmp_path, {"dev"}) == []  # no rendered/ at all
    for name in ("dev", "old", "attic"):
        (tmp_path / "rendered" / name).mkdir(parents=True)
    (tmp_path / "rendered" / "README").write_text("")
    assert unknown_dirs(tmp_path, {"dev"}) == ["rendered/attic/: extra", "rendered/old/: extra"]


@pytest.mark.parametrize(
    ("path", "installer"),
    [
        ("installers/kueue/values.yaml", True),
        ("kueue/clusterqueue-a.yaml", False),
        ("kueue/installers/x.yaml", False),  # only the top folder of rendered/<env>/ counts
    ],
)
def test_is_installer_input(path: str, installer: bool) -> None:
    assert is_installer_input(path) is installer


def test_cache_dir_follows_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRAINYARD_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv("TRAINYARD_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_dir() == tmp_path / ".cache" / "trainyard"
