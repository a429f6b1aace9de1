"""One way for a test module to have a cluster in a box (docs/controlplane.md, "Cluster in a
box"): `box_up(...)` brings one up through the CLI, as a user runs it, in a private
$TRAINYARD_BOX_DIR, and always brings it down.

Why one factory: every box module (tests/box, tests/whatif) had its own copy of the same
fixture, and each copy deleted the box's logs with `box down`, so a `box up` that timed out
under load (twice in ~14 runs, waiting for nodes Ready) left nothing to read. Here a failed
`box up`, or a test failing on the box, prints the last lines of every component's log (the
kwokctl components' and every host process's) before the box goes down.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from box.kube import Kube
from box.state import BOX_DIR_ENV, State
from tests.support import ROOT, tools

# Every pinned build `box up` may run (box/up.py; the adapter and the
# descheduler only for an environment that renders them): a missing one fails the module
# before a box starts, with the install command.
BOX_TOOLS = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "kwokctl",
    "kueue",
    "helm",
    "kubectl",
    "prometheus",
    "kube-state-metrics",
    "prometheus-adapter",
    "descheduler",
    "jobset",  # the environments enable JobSet: the box runs its controller (box/jobset.py)
)
# `box up --argocd` runs these too (box/argocd.py).
ARGOCD_TOOLS = ("argocd", "miniredis")
UP_SECONDS = 900  # a cold start on 2 cores shared by several sessions
DOWN_SECONDS = 300
CONTROLLER_SECONDS = 120  # admission, ungating, binding, KWOK and the job controller on 2 busy cores
LOG_LINES = 40  # of each component's log, printed on a failure


def run_cli(*args: str, box_dir: Path, timeout: float = UP_SECONDS) -> subprocess.CompletedProcess[str]:
    """`generate.py ARGS` from the checkout with $TRAINYARD_BOX_DIR = `box_dir`."""
    return subprocess.run(
        [sys.executable, str(ROOT / "generate.py"), *args],
        env={**os.environ, BOX_DIR_ENV: str(box_dir)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
    )


@dataclass
class UpBox:
    """A box `box up` reported up: where it lives and how to reach it."""

    env: str
    box_dir: Path  # its $TRAINYARD_BOX_DIR
    kubeconfig: Path
    state: State
    stdout: str
    stderr: str
    _clients: list[Kube] = field(default_factory=list, repr=False)

    @property
    def folder(self) -> Path:
        """The run directory (box/state.py run_dir)."""
        return self.box_dir / self.env

    @functools.cached_property
    def kube(self) -> Kube:
        """The module's admin client (one, made on first use)."""
        return self.client()

    def client(self) -> Kube:
        """A new admin client; closed when the box goes down (or by the caller)."""
        kube = Kube(self.kubeconfig, self.folder / f"test-discovery-{len(self._clients)}.json")
        self._clients.append(kube)
        return kube

    def run(self, *args: str, timeout: float = UP_SECONDS) -> subprocess.CompletedProcess[str]:
        """`generate.py ARGS` against this box (a scene, `box down`)."""
        return run_cli(*args, box_dir=self.box_dir, timeout=timeout)


@dataclass
class SceneRun:
    """`box scene NAME ENV` run once through the CLI on a module's box, as a user runs it."""

    kube: Kube
    done: subprocess.CompletedProcess[str]


def run_scene(box: UpBox, scene: str, timeout: float) -> SceneRun:
    return SceneRun(box.kube, box.run("box", "scene", scene, box.env, timeout=timeout))


def log_tails(folder: Path, lines: int = LOG_LINES) -> str:
    """The last `lines` lines of every log under the run directory `folder`: kwokctl's
    components (kwok/clusters/*/logs, or logs/ where a failed `up` copied them) and every
    host process the box started (Kueue, Prometheus, the controllers)."""
    if not folder.is_dir():
        return f"(no run directory {folder})"
    parts = []
    for path in sorted(folder.rglob("*.log")):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as err:
            parts.append(f"==> {path.relative_to(folder)}: unreadable ({err})")
            continue
        tail = text.splitlines()[-lines:]
        parts.append(f"==> {path.relative_to(folder)} (last {len(tail)} lines) <==\n" + "\n".join(tail))
    return "\n".join(parts) or f"(no log under {folder})"


Say = Callable[[str], None]


def to_stderr(text: str) -> None:
    print(text, file=sys.stderr)


def _report(say: Say, title: str, folder: Path) -> None:
    say(f"\n===== {title}: component logs of {folder} =====\n{log_tails(folder)}")


@contextlib.contextmanager
def box_up(
    box_dir: Path,
    env: str,
    *,
    speed: int = 1,
    scale: int = 1,
    failed: Callable[[], bool] = lambda: False,
    say: Say = to_stderr,
    down_must_succeed: bool = True,
    kubernetes: str = "",
    root: Path | None = None,
    argocd: bool = False,
) -> Iterator[UpBox]:
    """`box up ENV [--speed X] [--scale N] [--argocd]` in `box_dir`; yields the UpBox, then
    `box down`.

    On a failed `up` the logs are printed and the test fails with `up`'s own message; when
    `failed()` is true at the end (a test on this box failed) they are printed too, before
    `box down` removes them. `box down` runs whatever happened; with `down_must_succeed` a
    failing `down` fails the module (unless the box is already down: a test may `down` it)."""
    tools(*BOX_TOOLS, *(ARGOCD_TOOLS if argocd else ()))
    checkout = ["-C", str(root)] if root else []  # another checkout's environments/
    argv = [*checkout, "box", "up", env]
    if kubernetes:
        argv += ["--kubernetes", kubernetes]
    if argocd:
        argv.append("--argocd")
    if speed != 1:
        argv += ["--speed", str(speed)]
    if scale != 1:
        argv += ["--scale", str(scale)]
    folder = box_dir / env
    upbox: UpBox | None = None
    try:
        try:
            done = run_cli(*argv, box_dir=box_dir)
        except subprocess.TimeoutExpired:
            _report(say, f"`{' '.join(argv)}` took over {UP_SECONDS}s", folder)
            raise
        state = State.load(folder)
        if done.returncode != 0 or state is None or not state.ready:
            _report(say, f"`box {' '.join(argv[1:])}` failed", folder)
            pytest.fail(f"box {' '.join(argv[1:])} failed ({done.returncode}):\n{done.stderr[-6000:]}")
        assert state.speed == speed and state.scale == scale, state
        upbox = UpBox(
            env, box_dir, Path(done.stdout.strip().splitlines()[-1]), state, done.stdout, done.stderr
        )
        yield upbox
        if failed():
            _report(say, f"a test on the {env} box failed", folder)
    except BaseException:
        if upbox is not None:  # a failure after `up` (a module fixture's own work on the box)
            _report(say, f"the {env} box's fixture failed", folder)
        raise
    finally:
        for kube in upbox._clients if upbox else []:
            kube.close()
        down = run_cli(*checkout, "box", "down", env, box_dir=box_dir, timeout=DOWN_SECONDS)
        if down_must_succeed:
            assert down.returncode == 0, down.stderr[-3000:]


def module_box(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    env: str,
    *,
    speed: int = 1,
    scale: int = 1,
    argocd: bool = False,
) -> contextlib.AbstractContextManager[UpBox]:
    """`box_up` for a module-scoped fixture: its own temporary $TRAINYARD_BOX_DIR, and the
    logs printed if any test of the session failed while the box was up."""
    failures = request.session.testsfailed
    capture = request.config.pluginmanager.getplugin("capturemanager")

    def say(text: str) -> None:
        # Past pytest's capture: a module fixture's teardown output is shown only when the
        # last test's report fails, and the failing test may be an earlier one.
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            to_stderr(text)

    return box_up(
        tmp_path_factory.mktemp("box"),
        env,
        failed=lambda: request.session.testsfailed > failures,
        say=say,
        speed=speed,
        scale=scale,
        argocd=argocd,
    )
