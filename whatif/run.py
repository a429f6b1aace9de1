"""`simulate ENV --trace FILE [--base REF]`: each side on a fresh box, one after the other.

A side is a checkout root whose environments/ the box renders: the working tree for head,
and for the base a temp checkout holding `environments/` as committed at REF (read with
generators/diff/gitref.py, like `diff --base`). Both are rendered by the working tree's
generators: the what-if answers "what does this change of the specs do", the question a
shares or priority change asks; a generator change is `diff`'s to show, not a replay's.

The boxes live in their own run directory (`$TRAINYARD_BOX_DIR/simulate`, else
`<tool cache>/box/simulate`), so a simulation never collides with a box the user brought up
with `box up`; only one box runs at a time (2 cores), and each is brought down whatever
happens.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from box.state import BOX_DIR_ENV, run_dir
from generators.diff import gitref
from generators.layout import ENV_DIR
from generators.model.environment import Environment
from generators.model.load import load
from whatif import trace as traces
from whatif.replay import BoxParts, Replayed, replay
from whatif.report import Side

if TYPE_CHECKING:
    from box.up import Box


@contextlib.contextmanager
def own_box_dir() -> Iterator[Path]:
    """$TRAINYARD_BOX_DIR pointed at a `simulate` folder beside the user's boxes, restored after."""
    before = os.environ.get(BOX_DIR_ENV)
    folder = run_dir("simulate")  # <box dir>/simulate: a folder, not an environment
    os.environ[BOX_DIR_ENV] = str(folder)
    try:
        yield folder
    finally:
        if before is None:
            os.environ.pop(BOX_DIR_ENV, None)
        else:
            os.environ[BOX_DIR_ENV] = before


def base_checkout(root: Path, ref: str, folder: Path) -> tuple[Path, str]:
    """A checkout in `folder` holding environments/ as committed at `ref`; (its root, label)."""
    base = gitref.resolve(root, ref)
    shutil.rmtree(folder, ignore_errors=True)
    for path, content in gitref.read_tree(root, base.commit, (ENV_DIR,)).items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return folder, f"base {base.label} ({base.short})"


@dataclass(frozen=True)
class Result:
    head: Side
    base: Side | None
    replays: dict[str, Replayed]


def _gpu_resource(env: Environment) -> str:
    resources = {p.gpu_resource for p in env.pools}
    if len(resources) != 1:  # the Job names one resource; pools of different vendors need a per-job key
        raise ValueError(f"{env.name}: pools name GPU resources {sorted(resources)}; the replay needs one")
    return resources.pop()


def side(
    root: Path,
    env_name: str,
    trace_path: Path,
    display: str,
    scale: int,
    speed: int,
    label: str,
    say: Callable[[str], None],
    until: float | None = None,
) -> tuple[Side, Replayed]:
    """Up a box of `root`'s environment, replay the trace, down the box."""
    from box.up import down, up

    env = load(root, env_name)
    trace = traces.load(trace_path, display, env)  # refused at the trace's line for this side's queues
    say(
        f"{label}: bringing up a box of {env_name}"
        + (f" --scale {scale}" if scale > 1 else "")
        + f" --speed {speed}"
    )
    try:
        box = up(root, env_name, scale, speed, say)
        kube = box.client()
        try:
            replayed = replay(kube, box.client, trace, _gpu_resource(env), speed, say, parts_of(box), until)
        finally:
            kube.close()
        say(
            f"{label}: box up {box.state.up_seconds:.0f} s, replay {replayed.wall_seconds:.0f} s wall for "
            f"{replayed.span:.0f} s of trace ({len(replayed.outcomes)} jobs)"
            + (f", cut at {replayed.cut.at:g} s" if replayed.cut is not None else "")
        )
    finally:
        down(env_name, say=say)
    return side_of(label, box.env, replayed), replayed


def side_of(label: str, env: Environment, replayed: Replayed) -> Side:
    """The report's side: what the replay saw, with the pools' GPUs and the providers' prices
    of `env` (the box's copy: --scale applied)."""
    capacity = tuple((p.name, p.gpus) for p in env.pools)
    providers = env.overflow.providers if env.overflow is not None else ()
    prices = tuple((p.name, p.cost_per_gpu_hour_usd) for p in providers)
    return Side(
        label,
        replayed.outcomes,
        replayed.bound,
        replayed.quarantines,
        capacity,
        replayed.span,
        prices,
        replayed.cut,
    )


def parts_of(box: Box) -> BoxParts:
    return BoxParts(exporter_url(box), box.folder, box.env)


def exporter_url(box: Box) -> str | None:
    """The box's synthetic dcgm-exporter (a trace failure with an XID sets its fault)."""
    from box import dcgm_fake

    for process in box.state.processes:
        if process.name == dcgm_fake.NAME:
            return f"http://127.0.0.1:{process.ports[0]}"
    return None


def simulate(
    root: Path,
    env_name: str,
    trace_path: Path,
    display: str,
    base_ref: str | None,
    scale: int,
    speed: int,
    say: Callable[[str], None],
    until: float | None = None,
) -> Result:
    """Head (and base, first) replayed on fresh boxes; see the module docstring."""
    # Both sides' trace checks before any box comes up: a bad trace costs no minute.
    traces.load(trace_path, display, load(root, env_name))
    replays: dict[str, Replayed] = {}
    base = None
    with own_box_dir(), tempfile.TemporaryDirectory(prefix="trainyard-whatif-") as temp:
        if base_ref is not None:
            base_root, label = base_checkout(root, base_ref, Path(temp) / "base")
            traces.load(trace_path, display, load(base_root, env_name))
            base, replays[label] = side(
                base_root, env_name, trace_path, display, scale, speed, label, say, until
            )
        head, replays["head"] = side(root, env_name, trace_path, display, scale, speed, "head", say, until)
    return Result(head, base, replays)
