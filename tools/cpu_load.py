"""A synthetic CPU load for the flake-under-load runs: start and stop busy processes.

    python tools/cpu_load.py start [--workers 2]   # two processes spinning, detached
    python tools/cpu_load.py status                # which of them still run
    python tools/cpu_load.py stop                  # stop exactly those, verify they are gone

Each worker is this same file run as `python tools/cpu_load.py spin`: a pure-Python loop,
nothing installed, no external tool. Their process ids go to a state file
($TRAINYARD_CPU_LOAD_FILE, default <temp dir>/trainyard-cpu-load.json); `stop` signals only
the ids recorded there, and only if /proc still shows them running this file's `spin` (an id
reused by another program is left alone). Starting twice refuses while a recorded worker
still runs.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

STATE_ENV = "TRAINYARD_CPU_LOAD_FILE"
SPIN = "spin"
STOP_SECONDS = 10


def state_file() -> Path:
    return Path(os.environ.get(STATE_ENV) or Path(tempfile.gettempdir()) / "trainyard-cpu-load.json")


def _ours(pid: int) -> bool:
    """True while `pid` is a worker of this script (its command line says so)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    words = [a.decode(errors="replace") for a in argv if a]
    return len(words) >= 2 and words[-1] == SPIN and words[-2].endswith("cpu_load.py")


def _recorded() -> list[int]:
    try:
        return [int(p) for p in json.loads(state_file().read_text(encoding="utf-8"))["pids"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def start(workers: int) -> int:
    running = [p for p in _recorded() if _ours(p)]
    if running:
        print(f"cpu load already running: pids {running}; stop it first", file=sys.stderr)
        return 1
    pids = []
    for _ in range(workers):
        process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), SPIN],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not ended with the shell that started it
        )
        pids.append(process.pid)
    state_file().write_text(json.dumps({"pids": pids}) + "\n", encoding="utf-8")
    print(f"cpu load: {workers} busy processes, pids {pids} (stop: python tools/cpu_load.py stop)")
    return 0


def stop() -> int:
    pids = [p for p in _recorded() if _ours(p)]
    for pid in pids:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    while any(_ours(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in pids if _ours(p)]
    if left:
        print(f"cpu load: pids {left} still running after {STOP_SECONDS}s", file=sys.stderr)
        return 1
    state_file().unlink(missing_ok=True)
    print(f"cpu load stopped: pids {pids}" if pids else "cpu load: nothing was running")
    return 0


def status() -> int:
    running = [p for p in _recorded() if _ours(p)]
    print(f"cpu load running: pids {running}" if running else "cpu load: not running")
    return 0


def spin() -> int:
    """Busy until SIGTERM: one core's worth of pure-Python work."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    value = 0
    while True:
        value = (value * 1103515245 + 12345) % 2147483648


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("start", "stop", "status", SPIN))
    parser.add_argument("--workers", type=int, default=2, help="busy processes to start (default 2)")
    args = parser.parse_args(argv)
    if args.action == "start":
        return start(args.workers)
    if args.action == "stop":
        return stop()
    if args.action == "status":
        return status()
    return spin()


if __name__ == "__main__":
    sys.exit(main())
