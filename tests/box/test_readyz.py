"""box/readyz.py: a controller counts as started once /readyz answers 200, and one that
never answers is stopped, not left running.

The "controller" is Python's own http.server serving a folder that holds a `readyz` file
(200 on GET /readyz) or not (404): a real process on a real port, as the box's controllers
are."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from box import readyz
from box.daemon import Daemon, DaemonFailed, free_port, port_open


def _server(folder: Path, port: int) -> Daemon:
    argv = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)]
    return Daemon("httpd", argv, folder.parent / "httpd.log", ports=(port,))


def test_start_returns_once_readyz_answers_200(tmp_path: Path) -> None:
    folder = tmp_path / "served"
    folder.mkdir()
    (folder / "readyz").write_text("ok", encoding="utf-8")
    port = free_port()
    daemon = readyz.start(_server(folder, port), port, 60)
    try:
        assert daemon.running()
        assert readyz.ok(f"http://127.0.0.1:{port}/readyz")
    finally:
        daemon.stop()


def test_a_daemon_that_never_gets_ready_is_stopped(tmp_path: Path) -> None:
    folder = tmp_path / "served"
    folder.mkdir()  # no readyz file: the server answers 404
    port = free_port()
    daemon = _server(folder, port)
    with pytest.raises(DaemonFailed, match="no /readyz ok after 3s"):
        readyz.start(daemon, port, 3)
    assert not daemon.running()
    assert not port_open(port)
