"""A synthetic series exporter: a tiny /metrics endpoint a scene (or test) writes values
into, and Prometheus scrapes like any exporter.

SYNTHETIC: the values are whatever the caller sets, not measurements. It stands for the
exporter a real workload has (vLLM's request queue, a load balancer's backlog) so that the
path after it, Prometheus scraping it, prometheus-adapter querying Prometheus, the
controllers reading the adapter, runs for real.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import ThreadingHTTPServer
from pathlib import Path

from box.daemon import free_port
from box.httpd import Background, exposition_handler

Labels = Mapping[str, str]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class SyntheticSeries:
    """Gauges served as Prometheus text exposition on 127.0.0.1:<port>/metrics."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self._lock = threading.Lock()
        self.port = free_port()
        server = ThreadingHTTPServer(("127.0.0.1", self.port), exposition_handler(self.exposition))
        self._serving = Background(server, "synthetic-series")

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def set(self, name: str, labels: Labels, value: float) -> None:
        with self._lock:
            self._values[(name, tuple(sorted(labels.items())))] = value

    def exposition(self) -> str:
        with self._lock:
            items = sorted(self._values.items())
        lines = []
        for (name, labels), value in items:
            inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels)
            lines.append(f"{name}{{{inner}}} {value!r}")
        return "\n".join(lines) + "\n"

    def start(self) -> SyntheticSeries:
        self._serving.start()
        return self

    def stop(self) -> None:
        self._serving.stop()


def write_target(directory: Path, name: str, target: str) -> Path:
    """A Prometheus file_sd file naming `target` (Prometheus watches the folder)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps([{"targets": [target], "labels": {}}]), encoding="utf-8")
    temporary.replace(path)  # Prometheus never reads half a file
    return path
