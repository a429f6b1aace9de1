"""HTTP served from a thread of this process: the box's synthetic series exporter
(series.py) and the tests' exporters and proxies (tests/support/httpserver.py) start, stop
and answer a scrape the same way."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler


class Background:
    """`server` answering from a daemon thread from start() until stop() (an HTTP server on
    a TCP port, or on a unix socket)."""

    def __init__(self, server: socketserver.BaseServer, name: str | None = None) -> None:
        self.server = server
        self._thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)

    @property
    def port(self) -> int:
        """The TCP port (a server bound to port 0 got one from the kernel)."""
        address = self.server.server_address
        assert isinstance(address, tuple), f"{address!r} is no TCP address"
        return int(address[1])

    def start(self) -> Background:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


def exposition_handler(render: Callable[[], str]) -> type[BaseHTTPRequestHandler]:
    """A handler answering GET /metrics with `render()` as Prometheus text exposition (404
    elsewhere), and logging nothing: a scrape every second would drown the log."""

    class Exposition(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = render().encode()
            self.send_response(200 if self.path.startswith("/metrics") else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    return Exposition
