"""`render --check` trusts a stamp only while nothing that renders an environment changed
and rendered/<env>/ is byte for byte what was rendered (generators/speedups/renderstamp.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from generators.pipeline import fleet
from generators.speedups import keys, renderstamp
from tests.support.scratch import copy_repo, run_cli


@pytest.fixture
def stamped(
    repo_copy: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A repository copy rendered once, with its own stamp cache; stamps enabled."""
    monkeypatch.setenv("TRAINYARD_CACHE", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("TRAINYARD_SPEEDUPS", raising=False)
    assert run_cli(repo_copy, "render")[0] == 0
    yield repo_copy


def forbid_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any) -> Any:
        raise AssertionError("rendered although every stamp matched")

    monkeypatch.setattr(fleet, "map_environments", refuse)


def test_unchanged_fleet_is_checked_without_rendering(stamped: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_rendering(monkeypatch)
    ok = "render --check: rendered/ matches {} environment(s) ({})\n"
    assert run_cli(stamped, "render", "--check") == (0, ok.format(3, "dev, prod, staging"), "")
    assert run_cli(stamped, "render", "--check", "dev") == (0, ok.format(1, "dev"), "")


def test_edited_rendered_file_is_still_reported(stamped: Path) -> None:
    target = stamped / "rendered" / "prod" / "priorities"
    edited = next(target.iterdir())
    edited.write_text(edited.read_text() + "# hand edit\n")
    (target / "extra.yaml").write_text("kind: Extra\n")
    code, out, _ = run_cli(stamped, "render", "--check")
    assert code == 1
    assert out.splitlines() == sorted(
        [f"rendered/prod/priorities/{edited.name}: stale", "rendered/prod/priorities/extra.yaml: extra"]
    )


def test_edited_environment_renders_again(stamped: Path) -> None:
    env = stamped / "environments" / "dev.yaml"
    env.write_text(env.read_text() + "\n# a comment changes no object\n")
    ok = "render --check: rendered/ matches 3 environment(s) (dev, prod, staging)\n"
    assert run_cli(stamped, "render", "--check") == (0, ok, "")
    env.write_text(env.read_text().replace("nodes: ", "nodes: 1", 1))
    code, out, _ = run_cli(stamped, "render", "--check")
    assert code == 1
    assert "rendered/dev/" in out


def test_removed_environment_directory_is_reported(stamped: Path) -> None:
    shutil.rmtree(stamped / "rendered" / "staging")
    code, out, _ = run_cli(stamped, "render", "--check")
    assert code == 1
    assert "rendered/staging/" in out


@pytest.mark.parametrize(
    "variable",
    [("CI", "true"), ("TRAINYARD_SPEEDUPS", "0"), ("TRAINYARD_SPEEDUPS", "templates,shapes,schema")],
)
def test_stamps_are_not_read_in_ci_or_when_disabled(
    stamped: Path, variable: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(*variable)
    assert renderstamp.fresh(stamped, ["dev", "prod"]) == set()
    monkeypatch.delenv(variable[0])
    assert renderstamp.fresh(stamped, ["dev", "prod"]) == {"dev", "prod"}


def test_stamps_are_not_written_when_disabled(
    repo_copy: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("TRAINYARD_CACHE", str(cache))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TRAINYARD_SPEEDUPS", "0")
    assert run_cli(repo_copy, "render", "dev")[0] == 0
    assert not (cache / "render-stamps").exists()
    monkeypatch.setenv("TRAINYARD_SPEEDUPS", "stamps")
    assert run_cli(repo_copy, "render", "dev")[0] == 0
    assert len(list((cache / "render-stamps").iterdir())) == 1


def test_code_fingerprint_covers_templates_code_and_schemas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_repo(tmp_path, keys.FOLDERS)
    monkeypatch.setattr(keys, "CODE", tmp_path)
    seen = set()
    edits = ("templates/kueue/cohort.yaml.j2", "generators/model/quantity.py", "schemas/overflow.schema.json")
    for edited in edits:
        keys.code_fingerprint.cache_clear()
        seen.add(keys.code_fingerprint())
        (tmp_path / edited).write_text((tmp_path / edited).read_text() + "\n")
    keys.code_fingerprint.cache_clear()
    seen.add(keys.code_fingerprint())
    keys.code_fingerprint.cache_clear()
    assert len(seen) == 4


def test_digest_is_of_paths_and_bytes() -> None:
    one = keys.digest([("a.yaml", b"x"), ("b.yaml", b"y")])
    assert one == keys.digest([("b.yaml", b"y"), ("a.yaml", b"x")])
    assert one != keys.digest([("a.yaml", b"y"), ("b.yaml", b"x")])
    assert one != keys.digest([("a.yaml", b"x")])
