"""CLI: load the policy, connect, then query + step + enforce every reconcile interval.

The policy's `kind` picks the loop: TaintPolicy (the overflow gate, run() below) or
NodeHealthPolicy (per-node quarantine, health_controller.run_health). Both share the
flags, the Prometheus client, node patching, /metrics + /healthz and the Lease.

Between queries the nodes are re-checked every --node-resync-seconds, so a virtual node
recreated while its gate is closed gets the taint back within seconds, not a whole
reconcile interval later. SIGTERM or SIGINT ends the loop at the next wait; exit code 0.

With --lease-namespace only the holder of a coordination.k8s.io Lease acts (the
kubernetes client's own leader election); the others stand by and take over, reading the
state from the nodes, once the holder stops renewing. A leader that loses the Lease stops
acting at once and exits 1, so it restarts as a stand-by. Any exception inside one pass
is logged and counted (errors_total{stage="pass"}) and the next pass runs as usual.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from kubernetes import client, config
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from . import log
from .controller import LOG, Clock, GateEvaluator, TaintEnforcer
from .health_controller import HealthController, run_health
from .health_policy import NodeHealthPolicy, load_policy
from .hysteresis import GateState
from .log import event
from .metrics import GateMetrics, Health, HealthMetrics
from .nodes import KubeNodes, api_error
from .policy import PolicyError, TaintPolicy
from .prometheus import PrometheusClient

DEFAULT_POLICY = Path("/etc/trainyard/policy.yaml")
DEFAULT_METRICS_PORT = 9102
STARTUP_BACKOFF_MAX_SECONDS = 30.0
DEFAULT_LEASE_NAME = "overflow-gate"
# client-go's defaults for controllers (15 s lease, 10 s renew deadline, 2 s retry).
LEASE_SECONDS, RENEW_SECONDS, RETRY_SECONDS = 15, 10, 2
KUBE_REQUEST_SECONDS = 10.0  # KubeNodes' timeout per API call


def stall_seconds(policy: TaintPolicy | NodeHealthPolicy) -> float:
    """How long /healthz tolerates no progress: three reconcile intervals, each with a
    whole query deadline per query and an API timeout, at least a minute (a restart is not
    free)."""
    queries = len(policy.conditions) if isinstance(policy, NodeHealthPolicy) else 1
    per_pass = (
        policy.reconcile_interval_seconds + queries * policy.prometheus.timeout_seconds + KUBE_REQUEST_SECONDS
    )
    return max(60.0, 3 * per_pass)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="trainyard-gate",
        description="Open and close the overflow gate (a NoSchedule taint on virtual-kubelet "
        "nodes) from the number of free in-cluster GPUs in Prometheus (TaintPolicy), or "
        "quarantine GPU nodes that Prometheus shows unhealthy (NodeHealthPolicy).",
    )
    parser.add_argument(
        "--policy",
        type=Path,
        default=DEFAULT_POLICY,
        help=f"TaintPolicy or NodeHealthPolicy file (default {DEFAULT_POLICY})",
    )
    parser.add_argument(
        "--kubeconfig", type=Path, help="kubeconfig file (default: in-cluster service account)"
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="one query + enforce pass, then exit (1 if anything failed)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="log node changes instead of making them (also spec.dryRun)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=DEFAULT_METRICS_PORT,
        help=f"port for /metrics, 0 to disable (default {DEFAULT_METRICS_PORT})",
    )
    parser.add_argument("--metrics-address", default="0.0.0.0", help="address for /metrics (default 0.0.0.0)")
    parser.add_argument(
        "--node-resync-seconds",
        type=float,
        default=5.0,
        help="re-check nodes between queries this often, 0 to only re-check on each query (default 5)",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument(
        "--lease-namespace",
        help="hold a coordination.k8s.io Lease in this namespace and act only while holding "
        "it (default: no leader election, for --once and single test runs)",
    )
    parser.add_argument("--lease-name", default=DEFAULT_LEASE_NAME,
                        help=f"the Lease's name (default {DEFAULT_LEASE_NAME})")  # fmt: skip
    parser.add_argument(
        "--identity",
        default=os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}",
        help="this candidate's holderIdentity (default $POD_NAME, else host-pid)",
    )
    parser.add_argument("--lease-seconds", type=int, default=LEASE_SECONDS,
                        help=f"lease duration (default {LEASE_SECONDS})")  # fmt: skip
    parser.add_argument("--renew-seconds", type=int, default=RENEW_SECONDS,
                        help=f"a leader unable to renew for this long gives up (default {RENEW_SECONDS})")
    parser.add_argument("--retry-seconds", type=int, default=RETRY_SECONDS,
                        help=f"seconds between Lease attempts (default {RETRY_SECONDS})")  # fmt: skip
    parser.add_argument(
        "--stall-seconds",
        type=float,
        help="/healthz fails after this long without a pass (default: from the policy, "
        "3 x (interval + query timeout + API timeout), at least 60)",
    )
    args = parser.parse_args(argv)
    timing = args.retry_seconds >= 1 and 1.2 * args.retry_seconds < args.renew_seconds < args.lease_seconds
    if args.lease_namespace and not timing:
        parser.error("need 1 <= retry, 1.2 x retry < renew < lease seconds")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    log.configure(args.log_level)
    try:
        policy = load_policy(args.policy)
        api = core_api(args.kubeconfig)
    except (PolicyError, config.ConfigException) as err:
        print(str(err).splitlines()[0], file=sys.stderr)
        return 1
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    prometheus = PrometheusClient(policy.prometheus)
    nodes = KubeNodes(api, KUBE_REQUEST_SECONDS)
    dry_run = args.dry_run or policy.dry_run
    health = Health(args.stall_seconds or stall_seconds(policy))
    metrics: GateMetrics | HealthMetrics
    work: Callable[[threading.Event], int]
    if isinstance(policy, NodeHealthPolicy):
        health_policy = policy
        metrics = health_metrics = HealthMetrics([pool.name for pool in policy.pools], policy.reasons)
        controller = HealthController(policy, prometheus.query_nodes, nodes, health_metrics, dry_run)
        parts = {"pools": [pool.name for pool in policy.pools], "reasons": list(policy.reasons)}

        def work(halt: threading.Event) -> int:
            return run_health(health_policy, controller, health_metrics, halt, once=args.once, health=health)
    else:
        gate_policy = policy
        metrics = gate_metrics = GateMetrics(gate.name for gate in policy.gates)
        enforcer = TaintEnforcer(nodes, gate_metrics, dry_run=dry_run)
        parts = {"gates": [gate.name for gate in policy.gates]}

        def work(halt: threading.Event) -> int:
            return run(gate_policy, prometheus, enforcer, gate_metrics, halt, once=args.once,
                       node_resync_seconds=args.node_resync_seconds, health=health)  # fmt: skip

    try:
        server = metrics.serve(args.metrics_port, args.metrics_address, health) if args.metrics_port else None
    except OSError as err:
        prometheus.close()
        api.api_client.close()
        print(f"cannot serve metrics on {args.metrics_address}:{args.metrics_port}: {err}", file=sys.stderr)
        return 1
    event(
        LOG,
        logging.INFO,
        "starting",
        policy=policy.name,
        dry_run=dry_run,
        **parts,
        metrics_port=args.metrics_port,
        lease=f"{args.lease_namespace}/{args.lease_name}" if args.lease_namespace else None,
        identity=args.identity if args.lease_namespace else None,
    )
    try:
        if args.lease_namespace and not args.once:
            return elected(args, api.api_client, metrics, health, stop, work)
        metrics.leader.set(1)
        return work(stop)
    finally:
        prometheus.close()
        api.api_client.close()
        if server is not None:
            server[0].shutdown()
        event(LOG, logging.INFO, "stopped")


class _Elector(leaderelection.LeaderElection):
    """The client's leader election, made to survive and to report.

    try_acquire_or_renew is called every retry period whether leading or not. An
    exception there (the API unreachable in a way the lock does not catch) would end the
    election thread silently: it counts as a failed attempt instead. While standing by,
    each attempt is this process's sign of life for /healthz.
    """

    def __init__(self, cfg: electionconfig.Config, metrics: GateMetrics | HealthMetrics, health: Health,
                 leading: threading.Event) -> None:  # fmt: skip
        super().__init__(cfg)  # type: ignore[no-untyped-call]
        self._metrics, self._health, self._leading = metrics, health, leading

    def try_acquire_or_renew(self) -> bool:
        try:
            ok = bool(super().try_acquire_or_renew())  # type: ignore[no-untyped-call]
        except Exception as err:
            self._metrics.errors.labels(stage="election").inc()
            event(LOG, logging.ERROR, "lease attempt failed", error=api_error(err))
            ok = False
        if not self._leading.is_set():
            self._health.beat()
        return ok


def elected(
    args: argparse.Namespace,
    api_client: client.ApiClient,
    metrics: GateMetrics | HealthMetrics,
    health: Health,
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
        health.beat()
        event(LOG, logging.INFO, "leading", identity=args.identity)
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
    event(LOG, logging.INFO, "standing by for the lease", identity=args.identity)
    threading.Thread(target=_Elector(cfg, metrics, health, leading).run, name="leader-election",
                     daemon=True).start()  # fmt: skip
    while not (stop.wait(0.2) or halt.is_set()):
        pass
    halt.set()
    if lost.is_set() and not stop.is_set():
        event(LOG, logging.ERROR, "lost the lease; exiting so a restart stands by", identity=args.identity)
        return 1
    deadline = time.monotonic() + RENEW_SECONDS
    while leading.is_set() and not result and time.monotonic() < deadline:
        time.sleep(0.05)  # let the pass in flight finish before the process goes
    return result[0] if result else 0


def core_api(kubeconfig: Path | None) -> client.CoreV1Api:
    if kubeconfig is not None:
        # kubernetes.config is not annotated; the API classes are.
        # persist_config=False: never write refreshed credentials back into the file.
        api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig), persist_config=False
        )
        return client.CoreV1Api(api_client)
    configuration = client.Configuration()
    config.load_incluster_config(  # type: ignore[no-untyped-call]
        client_configuration=configuration
    )
    return client.CoreV1Api(client.ApiClient(configuration))


def run(
    policy: TaintPolicy,
    prometheus: PrometheusClient,
    enforcer: TaintEnforcer,
    metrics: GateMetrics,
    stop: threading.Event,
    *,
    once: bool,
    node_resync_seconds: float,
    clock: Clock = time.monotonic,
    health: Health | None = None,
) -> int:
    """The reconcile loop; returns the process exit code."""
    beat = health.beat if health is not None else (lambda: None)
    initial = initial_states(policy, enforcer, metrics, stop, once=once, beat=beat)
    if initial is None:
        return 1 if once else 0
    evaluator = GateEvaluator(
        policy, lambda: prometheus.query_single(policy.query), metrics, initial, clock=clock
    )
    next_query = clock()
    while True:
        ok = one_pass(policy, evaluator, enforcer, metrics, stop, next_query <= clock())
        if next_query <= clock():
            next_query = clock() + policy.reconcile_interval_seconds
        beat()
        if once:
            return 0 if ok else 1
        wait = next_query - clock()
        if node_resync_seconds > 0:
            wait = min(wait, node_resync_seconds)
        if stop.wait(max(0.0, wait)):
            return 0


def one_pass(
    policy: TaintPolicy,
    evaluator: GateEvaluator,
    enforcer: TaintEnforcer,
    metrics: GateMetrics,
    stop: threading.Event,
    query: bool,
) -> bool:
    """Query (when due) and enforce every gate; True if everything succeeded. Never raises:
    an exception here is a bug or a surprise, and dying would leave the nodes as they are
    with nobody watching, so it is logged and counted and the next pass tries again."""
    try:
        ok = evaluator.observe().error is None if query else True
        for gate in policy.gates:
            if stop.is_set():  # the Lease is gone or SIGTERM: touch nothing more
                return ok
            ok = enforcer.enforce(gate, evaluator.state(gate.name)) and ok
        return ok
    except Exception as err:
        metrics.errors.labels(stage="pass").inc()
        error = f"{type(err).__name__}: {err}".splitlines()[0]
        event(LOG, logging.ERROR, "reconcile pass failed", error=error)
        return False


def initial_states(
    policy: TaintPolicy,
    enforcer: TaintEnforcer,
    metrics: GateMetrics,
    stop: threading.Event,
    *,
    once: bool,
    beat: Callable[[], None] = lambda: None,
) -> dict[str, GateState] | None:
    """Gate states read from the nodes, retried with backoff; None if stopped first."""
    backoff = 1.0
    while not stop.is_set():
        try:
            return enforcer.initial_states(policy.gates)
        except Exception as err:  # API down at start-up: keep trying, stay killable
            metrics.errors.labels(stage="nodes").inc()
            event(
                LOG,
                logging.ERROR,
                "cannot read nodes for the initial state",
                error=api_error(err),
                retry_seconds=backoff,
            )
            beat()  # retrying is progress; a hung call is not
            if once:
                return None
            stop.wait(backoff)
            backoff = min(backoff * 2, STARTUP_BACKOFF_MAX_SECONDS)
    return None
