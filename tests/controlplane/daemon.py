"""Moved to generators/box/daemon.py (the cluster in a box uses it too); this module keeps
the old import path for the tests that use it."""

from __future__ import annotations

from generators.box.daemon import (
    STOP_GRACE_SECONDS,
    Daemon,
    DaemonFailed,
    free_port,
    port_open,
)

__all__ = [
    "STOP_GRACE_SECONDS",
    "Daemon",
    "DaemonFailed",
    "free_port",
    "port_open",
]
