"""One switch, TRAINYARD_SPEEDUPS, turns every speed-up layer off (generators/speedups): the
commands then give the same output and leave nothing in the cache; $CI turns off the layers
that would let an earlier run vouch for today's answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from generators import speedups
from tests.support.scratch import run_cli, tree_digest

ON_DISK = ("jinja", "render-stamps", "schema-valid")


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(speedups.SWITCH, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, set(speedups.LAYERS)),
        ("1", set(speedups.LAYERS)),
        ("0", set()),
        ("", set()),
        ("stamps, shapes", {"stamps", "shapes"}),
        ("stampz", set()),  # a typo turns layers off: that only costs time
    ],
)
def test_the_switch(switch: pytest.MonkeyPatch, value: str | None, expected: set[str]) -> None:
    if value is not None:
        switch.setenv(speedups.SWITCH, value)
    assert {layer for layer in speedups.LAYERS if speedups.on(layer)} == expected


def test_ci_turns_off_what_could_vouch_for_an_answer(switch: pytest.MonkeyPatch) -> None:
    switch.setenv("CI", "true")
    assert {layer for layer in speedups.LAYERS if speedups.on(layer)} == {"templates", "shapes", "reuse"}
    switch.setenv(speedups.SWITCH, "0")
    assert not any(speedups.on(layer) for layer in speedups.LAYERS)


def test_an_unknown_layer_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="one of templates"):
        speedups.on("stamp")


def test_switched_off_same_answers_and_nothing_cached(
    repo_copy: Path, tmp_path_factory: pytest.TempPathFactory, switch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path_factory.mktemp("cache")
    switch.setenv("TRAINYARD_CACHE", str(cache))
    committed = tree_digest(repo_copy / "rendered")
    switch.setenv(speedups.SWITCH, "0")
    off = [run_cli(repo_copy, "render"), run_cli(repo_copy, "render", "--check")]
    assert [code for code, _, _ in off] == [0, 0]
    assert tree_digest(repo_copy / "rendered") == committed
    assert not [name for name in ON_DISK if (cache / name).exists()]
    switch.delenv(speedups.SWITCH)  # on: the same answers, and stamps and schema markers kept
    assert [run_cli(repo_copy, "render"), run_cli(repo_copy, "render", "--check")] == off
    assert (cache / "render-stamps").is_dir() and (cache / "schema-valid").is_dir()


def test_switched_off_validate_is_clean(repo_copy: Path, switch: pytest.MonkeyPatch) -> None:
    switch.setenv(speedups.SWITCH, "0")
    code, out, err = run_cli(repo_copy, "validate", "dev")
    assert code == 0, out + err
