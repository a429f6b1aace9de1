"""A child process in its own process group, its log, a readiness poll and a clean stop.

Shared by the control plane (etcd, kube-apiserver) and the controllers the tests run
against it (Kueue, the descheduler, the gate). Every process gets its own session so a
stop kills it and anything it spawned, and the stop verifies that nothing of the group
survived and its ports are closed again: a leaked apiserver would hold ports and
gigabytes for the rest of the machine's life.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

STOP_GRACE_SECONDS = 20  # etcd and the apiserver flush and close watches on SIGTERM


class DaemonFailed(RuntimeError):
    """The process exited early or never became ready; the message ends with its log tail."""


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def port_open(port: int) -> bool:
    """True if something accepts connections on 127.0.0.1:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _reap(pid: int) -> None:
    """Collect `pid` if it is an exited child of this process: a zombie still counts as a
    member of its group for killpg(pgid, 0), so an unreaped child would look alive."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _group_alive(pgid: int) -> bool:
    _reap(pgid)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pid reused by someone else's group: not ours any more
        return False
    return _member_running(pgid)


PROC = Path("/proc")


def _member_running(pgid: int) -> bool:
    """Whether a process of group `pgid` has not exited: killpg(pgid, 0) counts a zombie too,
    and a box's processes outlive the `box up` that started them, so their zombies wait for
    the machine's init to collect them: about 2 s per stop here (an etcd killed by kwokctl
    looked alive 1.8 s). A zombie holds no port, memory or file. Without /proc (not Linux):
    alive, as killpg said."""
    if not PROC.is_dir():
        return True
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="ascii", errors="replace")
        except OSError:  # exited meanwhile
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


class Daemon:
    """One long-running binary with stdout+stderr in `log_path`."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        ports: Sequence[int] = (),
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.ports = tuple(ports)
        self._env = env
        self._cwd = cwd
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # own process group: killpg reaches every child
                env=self._env,
                cwd=self._cwd,
            )

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return "(no log)"

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait_until(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll `ready` until it is true; fail early with the log if the process dies."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.running():
                code = self.process.returncode if self.process else None
                raise DaemonFailed(f"{self.name} exited ({code}) before {what}:\n{self.log_tail()}")
            with contextlib.suppress(Exception):
                if ready():
                    return
            if time.monotonic() > deadline:
                raise DaemonFailed(f"{self.name}: no {what} after {timeout:.0f}s:\n{self.log_tail()}")
            time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM the group, SIGKILL after the grace period, then verify nothing is left."""
        if self.process is None:
            return
        pgid = self.process.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            self.process.wait(timeout=10)
        verify_gone(self.name, pgid, self.ports)


def group_alive(pgid: int) -> bool:
    """True while any process of group `pgid` lives."""
    return _group_alive(pgid)


def stop_group(name: str, pgid: int, ports: Sequence[int] = ()) -> None:
    """Stop a group this process did not start (e.g. `box down` after `box up` exited):
    SIGTERM, SIGKILL after the grace period, then verify it and its ports are gone."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _group_alive(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    verify_gone(name, pgid, ports)


def verify_gone(name: str, pgid: int, ports: Sequence[int]) -> None:
    """Raise DaemonFailed unless group `pgid` is gone and nothing listens on `ports`."""
    deadline = time.monotonic() + 10
    while _group_alive(pgid) or any(port_open(p) for p in ports):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            left = [p for p in ports if port_open(p)]
            raise DaemonFailed(f"{name}: process group {pgid} or ports {left} still alive after stop")
        time.sleep(0.1)
