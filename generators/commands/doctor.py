"""`doctor ENV --prometheus URL`: what a live Prometheus lacks for this environment's monitoring."""

from __future__ import annotations

import argparse
import sys
import urllib.parse

from generators.commands import add_env_argument, select_environments

HELP = (
    "ask a live Prometheus (read-only) for every metric and label the environment's dashboards, "
    "alerts and gate query read; print one line per gap with its fix (exit 0 none, 1 gaps, "
    "2 unreachable)"
)
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
        "--prometheus",
        required=True,
        metavar="URL",
        help="Prometheus base URL, e.g. http://localhost:9090 after `kubectl -n monitoring "
        "port-forward svc/prometheus-operated 9090`",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_SECONDS,
        metavar="SECONDS",
        help=f"per request (default {DEFAULT_TIMEOUT_SECONDS:g})",
    )
    parser.add_argument(
        "--time", metavar="T", help="evaluate at this time (RFC 3339 or Unix seconds) instead of now"
    )


def run(args: argparse.Namespace) -> int:
    url = urllib.parse.urlsplit(args.prometheus)
    if url.scheme not in ("http", "https") or not url.netloc:
        print(
            f"generate.py doctor: error: --prometheus {args.prometheus!r} is not an http(s) URL",
            file=sys.stderr,
        )
        return 2
    if not args.timeout > 0:
        print("generate.py doctor: error: --timeout must be above 0", file=sys.stderr)
        return 2
    if select_environments(args.root, [args.env]) is None:
        return 2
    from generators.model.load import load
    from generators.validation import doctor

    env = load(args.root, args.env)
    counted: list[doctor.Doctor] = []
    try:
        gaps = doctor.check(env, args.prometheus, args.timeout, args.time, report=counted.append)
    except doctor.Unreachable as error:
        hint = port_forward_hint(args.prometheus)
        print(f"generate.py doctor: error: {error}" + (f"; hint: {hint}" if hint else ""), file=sys.stderr)
        return 2
    for gap in gaps:
        print(gap.line())
    checked = counted[0]
    print(
        f"{env.name}: {len(gaps) or 'no'} gap{'' if len(gaps) == 1 else 's'} "
        f"({checked.checked_metrics} metrics and {checked.checked_labels} labels checked at "
        f"{args.prometheus})",
        file=sys.stderr,
    )
    return 1 if gaps else 0
