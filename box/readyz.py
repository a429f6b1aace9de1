"""Start a controller daemon and wait until its health port's /readyz answers 200.

controller-runtime managers (Kueue, JobSet) serve /readyz on their health probe address
once their caches have synced and their webhooks listen; a box controller is only of use
after that. A daemon that never becomes ready is stopped before the error is raised, so a
failed start leaves no process or port behind.
"""

from __future__ import annotations

import urllib.request

from box.daemon import Daemon


def start(daemon: Daemon, health_port: int, seconds: float) -> Daemon:
    """Start `daemon` and wait up to `seconds` for /readyz on `health_port`; stop it on failure."""
    daemon.start()
    url = f"http://127.0.0.1:{health_port}/readyz"
    try:
        daemon.wait_until(lambda: ok(url), seconds, "/readyz ok")
    except BaseException:
        daemon.stop()
        raise
    return daemon


def ok(url: str) -> bool:
    """True when `url` answers 200; a refused connection raises, which wait_until takes as not yet."""
    with urllib.request.urlopen(url, timeout=2) as response:
        return bool(response.status == 200)
