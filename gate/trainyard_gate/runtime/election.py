"""Act only while holding a coordination.k8s.io Lease (the kubernetes client's own leader
election); the other candidates stand by and take over, reading the state from the nodes,
once the holder stops renewing. A leader that loses the Lease stops acting at once and
exits 1, so it restarts as a stand-by."""

from __future__ import annotations

import argparse
import logging
import threading
import time
from collections.abc import Callable

from kubernetes import client
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from . import log
from .metrics import ControllerMetrics, Liveness
from .nodes import api_error

# client-go's defaults for controllers (15 s lease, 10 s renew deadline, 2 s retry).
LEASE_SECONDS, RENEW_SECONDS, RETRY_SECONDS = 15, 10, 2


class _Elector(leaderelection.LeaderElection):
    """The client's leader election, made to survive and to report.

    try_acquire_or_renew is called every retry period whether leading or not. An
    exception there (the API unreachable in a way the lock does not catch) would end the
    election thread silently: it counts as a failed attempt instead. While standing by,
    each attempt is this process's sign of life for /healthz.
    """

    def __init__(
        self,
        cfg: electionconfig.Config,
        metrics: ControllerMetrics,
        liveness: Liveness,
        leading: threading.Event,
    ) -> None:
        super().__init__(cfg)  # type: ignore[no-untyped-call]
        self._metrics, self._liveness, self._leading = metrics, liveness, leading

    def try_acquire_or_renew(self) -> bool:
        try:
            ok = bool(super().try_acquire_or_renew())  # type: ignore[no-untyped-call]
        except Exception as err:
            self._metrics.errors.labels(stage="election").inc()
            log.error("lease attempt failed", error=api_error(err))
            ok = False
        if not self._leading.is_set():
            self._liveness.beat()
        return ok


def elected(
    args: argparse.Namespace,
    api_client: client.ApiClient,
    metrics: ControllerMetrics,
    liveness: Liveness,
    stop: threading.Event,
    work: Callable[[threading.Event], int],
) -> int:
    """Run `work` only while holding the Lease; 0 on SIGTERM, 1 when the Lease is lost."""
    halt = threading.Event()  # stops `work`: SIGTERM or a lost Lease
    leading, lost = threading.Event(), threading.Event()
    result: list[int] = []

    def started() -> None:
        leading.set()
        metrics.leader.set(1)
        liveness.beat()
        log.info("leading", identity=args.identity)
        result.append(work(halt))
        halt.set()

    def stopped() -> None:
        metrics.leader.set(0)
        lost.set()
        halt.set()  # stop acting now: another candidate may take the Lease after it expires

    lock = LeaseLock(args.lease_name, args.lease_namespace, args.identity)  # type: ignore[no-untyped-call]
    lock.api_instance = client.CoordinationV1Api(api_client)  # not the default client
    cfg = electionconfig.Config(  # type: ignore[no-untyped-call]
        lock, args.lease_seconds, args.renew_seconds, args.retry_seconds, started, stopped
    )
    logging.getLogger("leaderelection").setLevel(logging.WARNING)  # it logs every attempt at info
    metrics.leader.set(0)
    log.info("standing by for the lease", identity=args.identity)
    threading.Thread(
        target=_Elector(cfg, metrics, liveness, leading).run, name="leader-election", daemon=True
    ).start()
    while not (stop.wait(0.2) or halt.is_set()):
        pass
    halt.set()
    if lost.is_set() and not stop.is_set():
        log.error("lost the lease; exiting so a restart stands by", identity=args.identity)
        return 1
    deadline = time.monotonic() + RENEW_SECONDS
    while leading.is_set() and not result and time.monotonic() < deadline:
        time.sleep(0.05)  # let the pass in flight finish before the process goes
    return result[0] if result else 0
