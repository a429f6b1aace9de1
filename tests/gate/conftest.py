"""Fixtures for the gate controller: a real Prometheus and a test exporter, and on the
session's real kube-apiserver a CoreV1Api (`api`) and a node fleet one test owns (`fleet`,
tests/gate/fleet.py) (gate/ is on sys.path through pytest's `pythonpath`, pyproject.toml)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from kubernetes import client
from trainyard_gate.runtime.nodes import core_api

from box.httpd import Background, exposition_handler
from tests.support.httpserver import QuietHTTPServer
from tests.support.prometheus import prometheus_server

from .fleet import Fleet

METRIC = "trainyard_test_free_gpus"


class Exporter:
    """A /metrics endpoint whose `metric` series (default `trainyard_test_free_gpus`) the
    test sets."""

    def __init__(self, metric: str = METRIC) -> None:
        self.metric = metric
        self._lock = threading.Lock()
        self._series: list[tuple[str, float]] = []
        self._serving = Background(QuietHTTPServer(("127.0.0.1", 0), exposition_handler(self.render))).start()
        self.port = self._serving.port

    def set(self, value: float) -> None:
        """Export exactly one series with `value`."""
        self.set_series([("", value)])

    def set_series(self, series: list[tuple[str, float]]) -> None:
        """Export these (label text, value) series; [] exports none."""
        with self._lock:
            self._series = list(series)

    def render(self) -> str:
        with self._lock:
            lines = [f"# TYPE {self.metric} gauge"]
            for labels, value in self._series:
                lines.append(f"{self.metric}{{{labels}}} {value}" if labels else f"{self.metric} {value}")
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        self._serving.stop()

    def __enter__(self) -> Exporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def scrape_config(port: int, job: str = "trainyard-test") -> str:
    """prometheus.yml scraping 127.0.0.1:`port` every second, as job `job`."""
    return (
        "global:\n"
        "  scrape_interval: 1s\n"
        "  scrape_timeout: 900ms\n"
        "scrape_configs:\n"
        f"  - job_name: {job}\n"
        "    static_configs:\n"
        f"      - targets: ['127.0.0.1:{port}']\n"
    )


@pytest.fixture(scope="session")
def exporter() -> Iterator[Exporter]:
    with Exporter() as served:
        yield served


@pytest.fixture(scope="session")
def prometheus_url(exporter: Exporter, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus (the pinned build from tools/install.py) scraping `exporter` at 1s."""
    with prometheus_server(tmp_path_factory.mktemp("prometheus"), scrape_config(exporter.port)) as served:
        _wait_first_scrape(served.url)
        yield served.url


def _wait_first_scrape(url: str) -> None:
    """Until the exporter target has been scraped once, so tests start from a warm server."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with contextlib.suppress(requests.RequestException, ValueError):
            body = requests.get(f"{url}/api/v1/query", params={"query": "up"}, timeout=1).json()
            if any(item["value"][1] == "1" for item in body["data"]["result"]):
                return
        time.sleep(0.1)
    pytest.fail(f"prometheus at {url} did not scrape the test exporter within 20s")


@pytest.fixture
def api(request: pytest.FixtureRequest) -> Iterator[client.CoreV1Api]:
    """A CoreV1Api on the control-plane harness's apiserver; skips without the harness."""
    try:
        kubeconfig = request.getfixturevalue("kubeconfig")
    except pytest.FixtureLookupError:
        pytest.skip("control-plane harness not available (tests/controlplane/fixtures.py)")
    core = core_api(Path(kubeconfig))
    yield core
    core.api_client.close()


@pytest.fixture
def fleet(api: client.CoreV1Api) -> Iterator[Fleet]:
    nodes = Fleet(api)
    try:
        yield nodes
    finally:
        nodes.cleanup()
