"""CLI: load the policy, connect, then query + step + enforce every reconcile interval.

Between queries the nodes are re-checked every --node-resync-seconds, so a virtual node
recreated while its gate is closed gets the taint back within seconds, not a whole
reconcile interval later. SIGTERM or SIGINT ends the loop at the next wait; exit code 0.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from kubernetes import client, config

from . import log
from .controller import LOG, Clock, GateEvaluator, TaintEnforcer
from .hysteresis import GateState
from .log import event
from .metrics import GateMetrics
from .nodes import KubeNodes
from .policy import PolicyError, TaintPolicy, load
from .prometheus import PrometheusClient

DEFAULT_POLICY = Path("/etc/trainyard/policy.yaml")
DEFAULT_METRICS_PORT = 9102
STARTUP_BACKOFF_MAX_SECONDS = 30.0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="trainyard-gate",
        description="Open and close the overflow gate (a NoSchedule taint on virtual-kubelet "
        "nodes) from the number of free in-cluster GPUs in Prometheus.",
    )
    parser.add_argument(
        "--policy",
        type=Path,
        default=DEFAULT_POLICY,
        help=f"TaintPolicy file (default {DEFAULT_POLICY})",
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
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    log.configure(args.log_level)
    try:
        policy = load(args.policy)
        api = core_api(args.kubeconfig)
    except (PolicyError, config.ConfigException) as err:
        print(str(err).splitlines()[0], file=sys.stderr)
        return 1
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    metrics = GateMetrics(gate.name for gate in policy.gates)
    try:
        server = metrics.serve(args.metrics_port, args.metrics_address) if args.metrics_port else None
    except OSError as err:
        print(f"cannot serve metrics on {args.metrics_address}:{args.metrics_port}: {err}", file=sys.stderr)
        return 1
    prometheus = PrometheusClient(policy.prometheus)
    enforcer = TaintEnforcer(KubeNodes(api), metrics, dry_run=args.dry_run or policy.dry_run)
    event(
        LOG,
        logging.INFO,
        "starting",
        policy=policy.name,
        dry_run=enforcer.dry_run,
        gates=[gate.name for gate in policy.gates],
        metrics_port=args.metrics_port,
    )
    try:
        return run(
            policy,
            prometheus,
            enforcer,
            metrics,
            stop,
            once=args.once,
            node_resync_seconds=args.node_resync_seconds,
        )
    finally:
        prometheus.close()
        api.api_client.close()
        if server is not None:
            server[0].shutdown()
        event(LOG, logging.INFO, "stopped")


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
) -> int:
    """The reconcile loop; returns the process exit code."""
    initial = initial_states(policy, enforcer, metrics, stop, once=once)
    if initial is None:
        return 1 if once else 0
    evaluator = GateEvaluator(
        policy, lambda: prometheus.query_single(policy.query), metrics, initial, clock=clock
    )
    next_query = clock()
    query_ok = True
    while True:
        if clock() >= next_query:
            query_ok = evaluator.observe().error is None
            next_query = clock() + policy.reconcile_interval_seconds
        results = [enforcer.enforce(gate, evaluator.state(gate.name)) for gate in policy.gates]
        if once:
            return 0 if query_ok and all(results) else 1
        wait = next_query - clock()
        if node_resync_seconds > 0:
            wait = min(wait, node_resync_seconds)
        if stop.wait(max(0.0, wait)):
            return 0


def initial_states(
    policy: TaintPolicy,
    enforcer: TaintEnforcer,
    metrics: GateMetrics,
    stop: threading.Event,
    *,
    once: bool,
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
                error=f"{type(err).__name__}: {err}".splitlines()[0],
                retry_seconds=backoff,
            )
            if once:
                return None
            stop.wait(backoff)
            backoff = min(backoff * 2, STARTUP_BACKOFF_MAX_SECONDS)
    return None
