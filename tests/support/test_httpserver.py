"""QuietHTTPServer: a client hanging up prints nothing; any other handler error still does."""

from __future__ import annotations

import contextlib
import io
from http.server import BaseHTTPRequestHandler

from tests.support.httpserver import QuietHTTPServer


def _error_output(error: Exception) -> str:
    server = QuietHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    try:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                raise error
            except Exception:
                # what socketserver calls from the handler thread when the handler raised
                server.handle_error(None, ("127.0.0.1", 1))
        return err.getvalue()
    finally:
        server.server_close()


def test_a_client_hanging_up_prints_nothing() -> None:
    assert _error_output(BrokenPipeError(32, "Broken pipe")) == ""
    assert _error_output(ConnectionResetError(104, "Connection reset by peer")) == ""


def test_any_other_handler_error_is_still_printed() -> None:
    out = _error_output(ValueError("a bug in the handler"))
    assert "Traceback" in out and "ValueError: a bug in the handler" in out
