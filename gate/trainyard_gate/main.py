"""CLI: load the policy, connect, then run the controller its `kind` names until stopped.

The policy's kind (kinds.py) picks the controller: TaintPolicy (the overflow gate,
overflow/) or NodeHealthPolicy (per-node quarantine, health/). Both run on the same
runtime (runtime/): the flags, the Prometheus client, node patching, the reconcile loop,
/metrics + /healthz and the Lease. SIGTERM or SIGINT ends the loop at the next wait; exit
code 0.

With --lease-namespace only the holder of a coordination.k8s.io Lease acts
(runtime/election.py); the others stand by and take over once the holder stops renewing.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from kubernetes import config

from . import kinds
from .runtime import log
from .runtime.election import LEASE_SECONDS, RENEW_SECONDS, RETRY_SECONDS, elected
from .runtime.metrics import Liveness
from .runtime.nodes import KUBE_REQUEST_SECONDS, KubeNodes, core_api
from .runtime.program import Options
from .runtime.prometheus import PrometheusClient
from .runtime.reader import PolicyError

DEFAULT_POLICY = Path("/etc/trainyard/policy.yaml")
DEFAULT_METRICS_PORT = 9102
DEFAULT_LEASE_NAME = "overflow-gate"


def stall_seconds(policy: kinds.Policy) -> float:
    """How long /healthz tolerates no progress: three reconcile intervals, each with a
    whole query deadline per query and an API timeout, at least a minute (a restart is not
    free)."""
    queries = policy.queries_per_pass
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
    parser.add_argument(
        "--lease-name", default=DEFAULT_LEASE_NAME, help=f"the Lease's name (default {DEFAULT_LEASE_NAME})"
    )
    parser.add_argument(
        "--identity",
        default=os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}",
        help="this candidate's holderIdentity (default $POD_NAME, else host-pid)",
    )
    parser.add_argument(
        "--lease-seconds", type=int, default=LEASE_SECONDS, help=f"lease duration (default {LEASE_SECONDS})"
    )
    parser.add_argument(
        "--renew-seconds",
        type=int,
        default=RENEW_SECONDS,
        help=f"a leader unable to renew for this long gives up (default {RENEW_SECONDS})",
    )
    parser.add_argument(
        "--retry-seconds",
        type=int,
        default=RETRY_SECONDS,
        help=f"seconds between Lease attempts (default {RETRY_SECONDS})",
    )
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
        policy = kinds.load_policy(args.policy)
        api = core_api(args.kubeconfig)
    except (PolicyError, config.ConfigException) as err:
        print(str(err).splitlines()[0], file=sys.stderr)
        return 1
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    prometheus = PrometheusClient(policy.prometheus)
    dry_run = args.dry_run or policy.dry_run
    liveness = Liveness(args.stall_seconds or stall_seconds(policy))
    options = Options(
        prometheus,
        KubeNodes(api, KUBE_REQUEST_SECONDS),
        dry_run,
        args.once,
        args.node_resync_seconds,
        liveness,
    )
    controller = kinds.start(policy, options)
    metrics = controller.metrics
    try:
        server = (
            metrics.serve(args.metrics_port, args.metrics_address, liveness) if args.metrics_port else None
        )
    except OSError as err:
        prometheus.close()
        api.api_client.close()
        print(f"cannot serve metrics on {args.metrics_address}:{args.metrics_port}: {err}", file=sys.stderr)
        return 1
    log.info(
        "starting",
        policy=policy.name,
        dry_run=dry_run,
        **controller.fields,
        metrics_port=args.metrics_port,
        lease=f"{args.lease_namespace}/{args.lease_name}" if args.lease_namespace else None,
        identity=args.identity if args.lease_namespace else None,
    )
    try:
        if args.lease_namespace and not args.once:
            return elected(args, api.api_client, metrics, liveness, stop, controller.work)
        metrics.leader.set(1)
        return controller.work(stop)
    finally:
        prometheus.close()
        api.api_client.close()
        if server is not None:
            server[0].shutdown()
        log.info("stopped")
