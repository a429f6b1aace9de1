"""The pinned Prometheus as the tests run it (tools/toolchain.py PINS): one command line, one
readiness wait, the two API reads the tests make (an instant query, the active targets).

`prometheus_server(workdir, config)` writes `config` to workdir/prometheus.yml and returns the server,
not started, with its TSDB in workdir/data and its web API on a free loopback port.
`start()` waits on /-/ready; `stop()` verifies the process group and its port are gone;
`with prometheus_server(...) as served:` does both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
