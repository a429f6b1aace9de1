"""`box up ENV [--scale N] [--speed X] [--argocd]`, `box down ENV`, `box kubeconfig ENV`,
`box scene NAME ENV`: the environment on a local cluster whose controllers are real
(docs/controlplane.md, "Cluster in a box")."""

from __future__ import annotations

import argparse
import re
import sys

from box.scenes import SCENES
from generators.commands import add_scale_argument, select_environments

HELP = (
    "run the environment on a local cluster in a box (etcd, kube-apiserver, controller-manager, "
    "scheduler, KWOK nodes, Kueue with webhooks; pinned builds): up, down, kubeconfig, scene"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        choices=("up", "down", "kubeconfig", "scene"),
        help="up: start and apply rendered/ENV; down: stop everything; "
        "kubeconfig: print the admin kubeconfig path of the running box; "
        f"scene NAME ENV: run a scene on the running box ({', '.join(SCENES)})",
    )
    parser.add_argument(
        "env",
        metavar="ENV",
        help="environment name (environments/<ENV>.yaml); for `scene`: the scene's NAME, then ENV",
    )
    parser.add_argument("scene_env", nargs="?", metavar="ENV", help=argparse.SUPPRESS)
    add_scale_argument(parser, only="up only: ")
    parser.add_argument(
        "--argocd",
        action="store_true",
        help="up only: deploy rendered/ENV with the real Argo CD v3.5.1 (application "
        "controller, repo server, Redis) from a git repository the box serves, instead of "
        "the box's own applier",
    )
    parser.add_argument(
        "--speed",
        type=int,
        default=1,
        metavar="X",
        help="up only: divide the environment's controller durations by X (gate hold "
        "times, descheduler cycle and minPodAge, health durations, alert windows; "
        "a sped-up copy of the spec is rendered)",
    )

    parser.add_argument(
        "--kubernetes",
        default="",
        metavar="MINOR",
        help="up only: run the box as Kubernetes MINOR (1.33 to 1.36: the pinned binaries at that "
        "compatibility version, --emulated-version) and render the environment for it; default: "
        "the environment's cluster.kubernetesVersion",
    )


def _usage(message: str) -> int:
    print(f"generate.py box: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    scene = None
    if args.action == "scene":
        if args.scene_env is None or args.env not in SCENES:
            return _usage(f"usage: box scene NAME ENV, NAME one of {', '.join(SCENES)}")
        scene, args.env = args.env, args.scene_env
    elif args.scene_env is not None:
        return _usage(f"box {args.action} takes one ENV, not {args.env!r} and {args.scene_env!r}")
    if args.scale < 1:
        return _usage(f"--scale must be a positive integer, not {args.scale}")
    if args.scale != 1 and args.action != "up":
        return _usage("--scale applies to `box up` only")
    if args.speed < 1:
        return _usage(f"--speed must be a positive integer, not {args.speed}")
    if args.argocd and args.action != "up":
        return _usage("--argocd applies to `box up` only (a scene finds Argo CD in the box it runs on)")
    if args.speed != 1 and args.action != "up":
        return _usage("--speed applies to `box up` only (a scene runs at the speed the box came up with)")
    if args.kubernetes and args.action != "up":
        return _usage(
            "--kubernetes applies to `box up` only (a scene runs on the minor the box came up with)"
        )
    if args.kubernetes and not re.fullmatch(r"1\.[0-9]+", args.kubernetes):
        return _usage(f"--kubernetes takes a minor such as 1.35, not {args.kubernetes!r}")
    try:
        import cryptography  # noqa: F401
        import kubernetes  # noqa: F401
    except ImportError as err:
        print(
            f"generate.py box: error: the box needs the development requirements ({err.name} is "
            "missing); run: make setup (the .venv with requirements-dev.txt)",
            file=sys.stderr,
        )
        return 2
    if args.action == "down":
        from box.up import down

        down(args.env, say=lambda line: print(line, file=sys.stderr))
        return 0
    if select_environments(args.root, [args.env]) is None:
        return 2
    from box.up import BoxError, kubeconfig, up
    from generators.errors import SpecError
    from tools.toolchain import ToolNotInstalled

    try:
        if args.action == "kubeconfig":
            print(kubeconfig(args.env))
            return 0
        if scene is not None:
            return _scene(args, scene)
        box = up(
            args.root,
            args.env,
            args.scale,
            args.speed,
            say=lambda line: print(line, file=sys.stderr),
            kubernetes=args.kubernetes,
            argocd=args.argocd,
        )
    except (BoxError, ToolNotInstalled) as err:
        print(f"generate.py box: error: {err}", file=sys.stderr)
        return 1
    except SpecError:
        raise  # the CLI prints spec problems at file:line:col
    except Exception as err:  # a component failed: its own message (with its log tail), no traceback
        print(
            f"generate.py box: error: box {args.action} {args.env} failed ({type(err).__name__}): {err}",
            file=sys.stderr,
        )
        return 1
    print(
        f"box {args.env} up in {box.state.up_seconds:.0f}s; Prometheus {box.state.prometheus}; "
        "kubeconfig (export KUBECONFIG=...):",
        file=sys.stderr,
    )
    print(box.kubeconfig)
    return 0


def _scene(args: argparse.Namespace, name: str) -> int:
    """Run scene `name` on the running box; exit 1 when it shows a README promise broken."""
    from box.kube import Kube
    from box.scenes.context import SceneContext
    from box.state import State, run_dir
    from box.up import kubeconfig, rendered

    folder = run_dir(args.env)
    state = State.load(folder)
    assert state is not None  # kubeconfig() below refuses a box that is not up
    path = kubeconfig(args.env)
    env, _ = rendered(args.root, args.env, state.scale, folder, state.speed, state.kubernetes)
    kube = Kube(path, folder / "scene-discovery.json")
    from box.argocd_up import NotDeployedByArgoCD

    try:
        context = SceneContext(kube, env, state, folder, lambda line: print(line, file=sys.stderr))
        result = SCENES[name](context)
    except NotDeployedByArgoCD as err:
        print(f"generate.py box: error: scene {name}: {err}", file=sys.stderr)
        return 1
    finally:
        kube.close()
    for line in result.lines():
        print(line)
    return 0 if result.ok else 1
