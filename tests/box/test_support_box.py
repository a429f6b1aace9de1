"""The box factory's failure path (tests/support/box.py), without starting a box: what a
failed `box up` prints is the tail of every component log, and the module fails with `up`'s
own message."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.box import box_up, log_tails


def test_log_tails_prints_the_last_lines_of_every_component_log(tmp_path: Path) -> None:
    folder = tmp_path / "staging"
    kwok_logs = folder / "kwok" / "clusters" / "trainyard-staging" / "logs"
    kwok_logs.mkdir(parents=True)
    (kwok_logs / "kwok-controller.log").write_text("".join(f"kwok {i}\n" for i in range(100)))
    (folder / "kueue").mkdir()
    (folder / "kueue" / "kueue.log").write_text("only line\n")
    (folder / "state.json").write_text("{}")  # not a log
    text = log_tails(folder, lines=3)
    assert text.splitlines() == [
        "==> kueue/kueue.log (last 1 lines) <==",
        "only line",
        "==> kwok/clusters/trainyard-staging/logs/kwok-controller.log (last 3 lines) <==",
        "kwok 97",
        "kwok 98",
        "kwok 99",
    ]
    assert log_tails(tmp_path / "absent") == f"(no run directory {tmp_path / 'absent'})"


def test_a_failed_up_reports_and_fails_with_ups_message(tmp_path: Path) -> None:
    said: list[str] = []
    with (
        pytest.raises(pytest.fail.Exception, match="box up no-such-env failed"),
        box_up(tmp_path, "no-such-env", say=said.append),
    ):
        raise AssertionError("the body must not run")
    assert len(said) == 1 and "`box up no-such-env` failed: component logs of" in said[0]
    assert not (tmp_path / "no-such-env").exists()
