"""The pinned Prometheus as the tests run it (tools/toolchain.py PINS): one command line, one
readiness wait, the two API reads the tests make (an instant query, the active targets).
And a TSDB backfilled from an OpenMetrics text (`backfill_text`), served read-only by the same
binary (`serve(binary, work)`: tests/monitoring/test_queries_live.py and the tests that reuse
its series).

`prometheus_server(workdir, config)` writes `config` to workdir/prometheus.yml and returns the server,
not started, with its TSDB in workdir/data and its web API on a free loopback port.
`start()` waits on /-/ready; `stop()` verifies the process group and its port are gone;
`with prometheus_server(...) as served:` does both.
"""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from box.daemon import Daemon
from tests.support import free_port, tool

READY_SECONDS = 60  # a margin for a machine whose cores other work keeps busy


@dataclass
class Prometheus:
    daemon: Daemon
    url: str

    def start(self) -> None:
        self.daemon.start()
        ready = lambda: requests.get(f"{self.url}/-/ready", timeout=2).status_code == 200  # noqa: E731
        self.daemon.wait_until(ready, READY_SECONDS, "/-/ready")

    def stop(self) -> None:
        self.daemon.stop()

    def __enter__(self) -> Prometheus:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector `expr` evaluates to now."""
        body = requests.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=10).json()
        assert body["status"] == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def active_targets(self) -> list[dict[str, Any]]:
        body = requests.get(f"{self.url}/api/v1/targets", params={"state": "active"}, timeout=10).json()
        targets: list[dict[str, Any]] = body["data"]["activeTargets"]
        return targets


def prometheus_server(workdir: Path, config: str) -> Prometheus:
    """The pinned Prometheus reading `config` (prometheus.yml text), not started."""
    (workdir / "prometheus.yml").write_text(config, encoding="utf-8")
    port = free_port()
    daemon = Daemon(
        "prometheus",
        [
            str(tool("prometheus")),
            f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        workdir / "prometheus.log",
        ports=(port,),
        cwd=workdir,
    )
    return Prometheus(daemon, f"http://127.0.0.1:{port}")


READY_DEADLINE_SECONDS = 120  # start-up on a busy 2-core machine; not an assertion on speed


def backfill_text(promtool: Path, work: Path, openmetrics: str) -> None:
    """A TSDB at work/tsdb holding the series of an OpenMetrics text."""
    (work / "data.om").write_text(openmetrics)
    done = subprocess.run(
        [str(promtool), "tsdb", "create-blocks-from", "openmetrics", "data.om", "tsdb"],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def wait_ready(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_DEADLINE_SECONDS
    while True:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"prometheus did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)


@contextmanager
def serve(prometheus_binary: Path, work: Path) -> Iterator[str]:
    """The pinned Prometheus serving work/tsdb on a free local port; its URL."""
    (work / "prometheus.yml").write_text("global: {scrape_interval: 1m}\n")
    port = free_port()
    log = (work / "prometheus.log").open("w")
    server = subprocess.Popen(
        [
            str(prometheus_binary),
            "--config.file=prometheus.yml",
            "--storage.tsdb.path=tsdb",
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        cwd=work,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, server, work / "prometheus.log")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
