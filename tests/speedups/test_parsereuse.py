"""validate and diff reuse the objects of a fresh render for committed files with exactly the
rendered text (generators/speedups/parsereuse.py): the objects must be what parsing gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from generators.layout import environment_names
from generators.model.load import load
from generators.pipeline import render
from generators.speedups.parsereuse import is_plain, rendered_objects
from generators.validation.kubeconform import manifest_files
from policies.context import read_objects
from tests.speedups.objects import same
from tests.support import ROOT


@pytest.fixture(autouse=True)
def speedups_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reuse is what these tests check: the caller's TRAINYARD_SPEEDUPS (`0` in a run that
    measures without speed-ups) must not switch it off under them."""
    monkeypatch.delenv("TRAINYARD_SPEEDUPS", raising=False)


def known_for(root: Path, name: str) -> dict[str, tuple[str, dict[str, Any]]]:
    files = render.render_tree(load(root, name))  # as validate and diff hand it over
    return rendered_objects(name, files)


@pytest.mark.parametrize("name", environment_names(ROOT))
def test_reused_objects_equal_parsed_ones(name: str) -> None:
    files = manifest_files([ROOT / "rendered" / name])
    known = known_for(ROOT, name)
    assert all(is_plain(obj) for _, obj in known.values()), "every rendered object is reusable"
    reused, parsed = read_objects(ROOT, files, known), read_objects(ROOT, files)
    assert reused.counts == parsed.counts
    assert [o.path for o in reused.objects] == [o.path for o in parsed.objects]
    for a, b in zip(reused.objects, parsed.objects, strict=True):
        assert same(a.obj, b.obj), a.path


def test_switched_off_every_file_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    files = manifest_files([ROOT / "rendered" / "dev"])
    known = known_for(ROOT, "dev")
    reused = read_objects(ROOT, files, known).objects
    assert all(any(o.obj is obj for _, obj in known.values()) for o in reused)
    monkeypatch.setenv("TRAINYARD_SPEEDUPS", "0")
    assert known_for(ROOT, "dev") == {}
    parsed = read_objects(ROOT, files, known_for(ROOT, "dev")).objects
    assert parsed and not any(o.obj is obj for o in parsed for _, obj in known.values())


def test_a_file_that_differs_is_parsed(repo_copy: Path) -> None:
    known = known_for(repo_copy, "dev")
    path = next(p for p in sorted((repo_copy / "rendered" / "dev").rglob("*.yaml")) if "namespace-" in p.name)
    path.write_text(path.read_text().replace("kind: Namespace", "kind: Namespace\nedited: true"))
    tree = read_objects(repo_copy, [path], known)
    assert tree.objects[0].obj["edited"] is True


def test_objects_that_parsing_could_not_give_are_not_reused(tmp_path: Path) -> None:
    path = tmp_path / "rendered" / "x" / "a.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("items:\n- a\n")
    tree = read_objects(tmp_path, [path], {"rendered/x/a.yaml": ("items:\n- a\n", {"items": ("a",)})})
    assert tree.objects[0].obj == {"items": ["a"]}
    assert not is_plain({"k": ("a",)}) and not is_plain({1: "a"}) and is_plain({"a": [1, 2.0, None, True]})


def test_diff_base_records_equal_parsed_ones() -> None:
    """diff's base side (generators.diff.objects.from_files) with today's rendering known."""
    from generators.diff.objects import from_files

    files = {p.relative_to(ROOT).as_posix(): p.read_bytes() for p in (ROOT / "rendered").rglob("*.yaml")}
    known = {
        path: (text.encode(), obj)
        for name in environment_names(ROOT)
        for path, (text, obj) in known_for(ROOT, name).items()
    }
    reused, parsed = from_files(files, known), from_files(files)
    assert list(reused) == list(parsed)
    for key, record in parsed.items():
        assert same(reused[key].obj, record.obj) and reused[key].path == record.path
    assert sum(reused[key].obj is known[reused[key].path][1] for key in reused) == len(files), "all reused"
