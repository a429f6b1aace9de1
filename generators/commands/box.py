"""`box up ENV [--scale N]`, `box down ENV`, `box kubeconfig ENV`: the environment on a local
cluster whose controllers are real (docs/controlplane.md, "Cluster in a box")."""

from __future__ import annotations

import argparse
import sys

from generators.commands import select_environments

HELP = ("run the environment on a local cluster in a box (etcd, kube-apiserver, controller-manager, "
        "scheduler, KWOK nodes, Kueue with webhooks; pinned builds): up, down, kubeconfig")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("up", "down", "kubeconfig"),
                        help="up: start and apply rendered/ENV; down: stop everything; "
                             "kubeconfig: print the admin kubeconfig path of the running box")
    parser.add_argument("env", metavar="ENV", help="environment name (environments/<ENV>.yaml)")
    parser.add_argument("--scale", type=int, default=1, metavar="N",
                        help="up only: divide the environment's node counts by N (a scaled copy of "
                             "the spec is rendered; quotas follow)")


def run(args: argparse.Namespace) -> int:
    if args.scale < 1:
        print(f"generate.py box: error: --scale must be a positive integer, not {args.scale}",
              file=sys.stderr)
        return 2
    if args.scale != 1 and args.action != "up":
        print("generate.py box: error: --scale applies to `box up` only", file=sys.stderr)
        return 2
    try:
        import cryptography  # noqa: F401
        import kubernetes  # noqa: F401
    except ImportError as err:
        print(f"generate.py box: error: the box needs the development requirements ({err.name} is "
              "missing); run: make setup (the .venv with requirements-dev.txt)", file=sys.stderr)
        return 2
    if args.action == "down":
        from generators.box.up import down

        down(args.env, say=lambda line: print(line, file=sys.stderr))
        return 0
    if select_environments(args.root, [args.env]) is None:
        return 2
    from generators.box.up import BoxError, kubeconfig, up
    from generators.errors import SpecError
    from tools.toolchain import ToolNotInstalled

    try:
        if args.action == "kubeconfig":
            print(kubeconfig(args.env))
            return 0
        box = up(args.root, args.env, args.scale, say=lambda line: print(line, file=sys.stderr))
    except (BoxError, ToolNotInstalled) as err:
        print(f"generate.py box: error: {err}", file=sys.stderr)
        return 1
    except SpecError:
        raise  # the CLI prints spec problems at file:line:col
    except Exception as err:  # a component failed: its own message (with its log tail), no traceback
        print(f"generate.py box: error: box up {args.env} failed ({type(err).__name__}): {err}",
              file=sys.stderr)
        return 1
    print(f"box {args.env} up in {box.state.up_seconds:.0f}s; kubeconfig (export KUBECONFIG=...):",
          file=sys.stderr)
    print(box.kubeconfig)
    return 0
