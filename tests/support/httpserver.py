"""The tests' in-process HTTP servers (a /metrics exporter, a scrape proxy, a CRD mirror).

`http.server` prints a traceback to `sys.stderr` when a client hangs up mid-answer (a
Prometheus scrape cut at its timeout, under load). That thread writes to whatever
`sys.stderr` is at that moment, and `contextlib.redirect_stderr` swaps it for the whole
process: a CLI test running meanwhile then finds a "Traceback" in its own stderr
(tests/test_bad_input.py failed so, once, in a loaded full run). A client hanging up is
normal for these servers; any other error is still reported.
"""

from __future__ import annotations

import sys
from http.server import ThreadingHTTPServer
from typing import Any


class QuietHTTPServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer that says nothing when its client hangs up."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exception(), ConnectionError):  # BrokenPipe, ConnectionReset, ...
            return
        super().handle_error(request, client_address)
