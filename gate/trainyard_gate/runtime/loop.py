"""The reconcile loop both policy kinds run, and the guarded pass inside it.

Every `interval` seconds a pass with a query; with `resync_seconds` > 0 (the overflow gate's
--node-resync-seconds) passes without one in between, so a virtual node recreated while its
gate is closed gets the taint back within seconds. SIGTERM or SIGINT (`stop`) ends the loop
at the next wait, exit code 0. A pass never ends the loop: an exception in it is logged and
counted (errors_total{stage="pass"}) and the next pass runs as usual.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from prometheus_client import Counter

from . import log

Clock = Callable[[], float]


def guarded(work: Callable[[], bool], errors: Counter) -> bool:
    """`work()`, which never raises here: an exception is a bug or a surprise, and dying
    would leave the nodes as they are with nobody watching (a gate open, a node quarantined
    with nobody to release it), so it is logged and counted and the next pass tries again."""
    try:
        return work()
    except Exception as err:
        errors.labels(stage="pass").inc()
        error = f"{type(err).__name__}: {err}".splitlines()[0]
        log.error("reconcile pass failed", error=error)
        return False


def run(
    one_pass: Callable[[bool], bool],
    interval: float,
    stop: threading.Event,
    *,
    once: bool,
    resync_seconds: float = 0.0,
    clock: Clock = time.monotonic,
    beat: Callable[[], None] = lambda: None,
) -> int:
    """Call `one_pass(query_due)` until stopped; the process exit code (for `once`: 0 if the
    one pass succeeded). The next query is due `interval` after the end of the pass that ran
    the last one; `beat` (liveness) after every pass."""
    next_query = clock()
    while True:
        due = next_query <= clock()
        ok = one_pass(due)
        if due:
            next_query = clock() + interval
        beat()
        if once:
            return 0 if ok else 1
        wait = next_query - clock()
        if resync_seconds > 0:
            wait = min(wait, resync_seconds)
        if stop.wait(max(0.0, wait)):
            return 0
