"""box/cluster.py: the machine-wide lock around kwokctl's cluster start.

Two boxes created in the same second (CI beside another checkout's box) once chose the same
etcd peer port; the lock makes the second start wait until the first one's ports are bound.
Shown with two processes, as the collision happens: the lock is an flock, and a thread of the
same process would share it."""

from __future__ import annotations

import subprocess
import sys
import threading

from box import cluster
from tests.support import ROOT

HOLD = """
import sys
from box.cluster import _create_lock
with _create_lock():
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_second_start_waits_for_the_first() -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "held"
        entered = threading.Event()

        def second() -> None:
            with cluster._create_lock():
                entered.set()

        waiter = threading.Thread(target=second, daemon=True)
        waiter.start()
        # Not a sleep to wait on: the assertion is that nothing happens while the other
        # process holds the lock; 2 s is how long we look before letting it go.
        assert not entered.wait(2.0), "a second start entered while another held the lock"
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert entered.wait(30.0), "the second start never entered after the first let go"
        waiter.join(5.0)
    finally:
        holder.kill()
        holder.wait()
