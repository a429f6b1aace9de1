"""tools/cpu_load.py, the synthetic load of the flake-under-load runs: `start` leaves busy
processes running after it returns, `stop` ends exactly those, and a second `start` refuses
while they run. Fast: one worker for about a second."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

SCRIPT = ROOT / "tools" / "cpu_load.py"


def run(action: str, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRAINYARD_CPU_LOAD_FILE": str(state)}
    return subprocess.run(
        [sys.executable, str(SCRIPT), action, *args], env=env, capture_output=True, text=True, timeout=60
    )


def spinning(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[-2] == b"spin"
    except (OSError, IndexError):
        return False


def test_start_leaves_workers_running_and_stop_ends_them(tmp_path: Path) -> None:
    state = tmp_path / "load.json"
    started = run("start", state, "--workers", "1")
    assert started.returncode == 0, started.stderr
    [pid] = json.loads(state.read_text())["pids"]
    try:
        assert spinning(pid)
        again = run("start", state)
        assert again.returncode == 1 and "already running" in again.stderr
        assert f"pids [{pid}]" in run("status", state).stdout
    finally:
        stopped = run("stop", state)
    assert stopped.returncode == 0, stopped.stderr
    assert not spinning(pid)
    assert not state.exists()
    assert "nothing was running" in run("stop", state).stdout


@pytest.mark.parametrize("action", ["status", "stop"])
def test_without_a_start_nothing_is_touched(tmp_path: Path, action: str) -> None:
    assert run(action, tmp_path / "none.json").returncode == 0
