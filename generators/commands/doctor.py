"""`doctor ENV [--kubeconfig [FILE]] [--prometheus URL]`: what a live cluster (its API server,
generators/doctor/cluster.py) and a live Prometheus (generators/validation/doctor.py) lack for
this environment. Which is read follows from the flags: --prometheus alone reads Prometheus
only; --kubeconfig (with or without a file) reads the cluster; neither reads the cluster
through kubectl's kubeconfig."""

from __future__ import annotations

import argparse
import sys
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

from generators.commands import add_env_argument, add_timeout_argument, select_environments

if TYPE_CHECKING:
    from generators.model.environment import Environment

HELP = (
    "read a live cluster (its API server, through a kubeconfig) and/or a live Prometheus, "
    "read-only, against the environment: print one line per gap with its fix (exit 0 none, "
    "1 gaps, 2 unreachable)"
)
DEFAULT_KUBECONFIG = "kubectl's"  # --kubeconfig without a file: $KUBECONFIG, else ~/.kube/config
DEFAULT_TIMEOUT_SECONDS = 10.0
IN_CLUSTER = (".svc", ".svc.cluster.local")  # a Service's DNS name: resolves inside the cluster only


def port_forward_hint(url: str) -> str | None:
    """For an in-cluster URL (http://<service>.<namespace>.svc:<port>), how to reach it from
    outside: a port-forward to that Service and the local URL to pass instead."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    suffix = next((s for s in IN_CLUSTER if host.endswith(s)), None)
    labels = host.removesuffix(suffix).split(".") if suffix else []
    if len(labels) != 2:
        return None
    service, namespace = labels
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return (
        f"{url} is a cluster-internal name; from outside the cluster run "
        f"`kubectl -n {namespace} port-forward svc/{service} {port}` and pass "
        f"--prometheus {parts.scheme}://localhost:{port}{parts.path.rstrip('/')}"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_env_argument(parser)
    parser.add_argument(
        "--kubeconfig",
        nargs="?",
        const=DEFAULT_KUBECONFIG,
        metavar="FILE",
        help="read the cluster through this kubeconfig (without FILE, or when neither this nor "
        "--prometheus is given: $KUBECONFIG, else ~/.kube/config, as kubectl)",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (default: its current)")
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        help="Prometheus base URL, e.g. http://localhost:9090 after `kubectl -n monitoring "
        "port-forward svc/prometheus-operated 9090`",
    )
    add_timeout_argument(parser, DEFAULT_TIMEOUT_SECONDS, "per request")
    parser.add_argument(
        "--time", metavar="T", help="evaluate at this time (RFC 3339 or Unix seconds) instead of now"
    )


def run(args: argparse.Namespace) -> int:
    cluster = args.kubeconfig is not None or args.context is not None or args.prometheus is None
    if not args.timeout > 0:
        print("generate.py doctor: error: --timeout must be above 0", file=sys.stderr)
        return 2
    if select_environments(args.root, [args.env]) is None:
        return 2
    if args.prometheus is not None and not _prometheus_url_ok(args.prometheus):
        return 2
    from generators.model.load import load

    env = load(args.root, args.env)
    worst = 0
    if cluster:
        worst = max(worst, _run_cluster(env, args))
    if args.prometheus is not None:
        worst = max(worst, _run_prometheus(env, args))
    return worst


def _run_cluster(env: Environment, args: argparse.Namespace) -> int:
    from generators.doctor import cluster, kubeapi

    kubeconfig = None if args.kubeconfig in (None, DEFAULT_KUBECONFIG) else Path(args.kubeconfig)
    try:
        api = kubeapi.connect(kubeconfig, args.context, args.timeout)
        gaps, read = cluster.check(env, api)
    except kubeapi.KubeconfigError as error:
        print(f"doctor: kubeconfig: {error} — fix: {error.fix}", file=sys.stderr)
        return 2
    except kubeapi.Unreachable as error:
        print(
            f"doctor: the API server did not answer as needed: {error} — fix: check the context "
            "(kubectl --context ... get nodes) and that it may get, list nodes, namespaces, "
            "deployments, configmaps and prometheuses",
            file=sys.stderr,
        )
        return 2
    for gap in gaps:
        print(f"doctor: {gap.what} — fix: {gap.fix}")
    state = f"{len(gaps)} gap{'' if len(gaps) == 1 else 's'}" if gaps else "the cluster matches"
    print(
        f"{env.name}: {state} (context {api.context_name}: Kubernetes {read.version}, Kueue "
        f"{read.kueue or 'absent'}, {read.nodes} nodes in {read.pools} pools, "
        f"{read.virtual_nodes} virtual nodes, {read.monitors} monitoring objects against "
        f"{', '.join(read.prometheus) or 'no Prometheus'})",
        file=sys.stderr,
    )
    return 1 if gaps else 0


def _prometheus_url_ok(value: str) -> bool:
    url = urllib.parse.urlsplit(value)
    if url.scheme not in ("http", "https") or not url.netloc:
        print(
            f"generate.py doctor: error: --prometheus {value!r} is not an http(s) URL",
            file=sys.stderr,
        )
        return False
    return True


def _run_prometheus(env: Environment, args: argparse.Namespace) -> int:
    from generators.validation import doctor

    counted: list[doctor.Doctor] = []
    try:
        gaps = doctor.check(env, args.prometheus, args.timeout, args.time, report=counted.append)
    except doctor.Unreachable as error:
        hint = port_forward_hint(args.prometheus)
        print(f"generate.py doctor: error: {error}" + (f"; hint: {hint}" if hint else ""), file=sys.stderr)
        return 2
    for gap in gaps:
        print(f"{gap.what}: {gap.fix}")
    checked = counted[0]
    print(
        f"{env.name}: {len(gaps) or 'no'} gap{'' if len(gaps) == 1 else 's'} "
        f"({checked.checked_metrics} metrics and {checked.checked_labels} labels checked at "
        f"{args.prometheus})",
        file=sys.stderr,
    )
    return 1 if gaps else 0
