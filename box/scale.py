"""`box up ENV --scale N [--speed X]`: the environment with its node counts divided, as a spec.

The scaled copy is a spec, never a patch of rendered/: environments/ is copied into a temp
checkout, each pool's `nodes` and `reserveNodes` and the health cap's `maxNodes` are divided
by N there (rounded up: a pool keeps at least one node, a reserve stays a reserve; a cap
percentage that would round to no node is raised to the smallest that allows one), and the
real generators load, validate and render that copy. So quotas, caps and queue sizes follow
the smaller fleet exactly as they would if a user wrote it. Rejections of the scaled spec
are the generators' own one-line errors, naming the scaled file. `--speed` divides the
controller durations of that copy (box/speed.py).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import yaml

from box.speed import sped_up
from generators.layout import ENV_DIR


class ScaleError(ValueError):
    """The environment cannot be scaled as asked (the message says why)."""


def _divided(value: Any, scale: int) -> Any:
    return math.ceil(value / scale) if isinstance(value, int) else value


def scaled_spec(text: str, scale: int, source: str) -> str:
    """The spec text with node counts divided by `scale` (comments are not kept)."""
    document = yaml.safe_load(text)
    pools = document.get("pools") if isinstance(document, dict) else None
    if not isinstance(pools, list):
        raise ScaleError(f"{source}: no pools list to scale (the environment must declare its pools)")
    for pool in pools:
        if isinstance(pool, dict):
            for key in ("nodes", "reserveNodes"):
                if key in pool:
                    pool[key] = _divided(pool[key], scale)
    cap = (document.get("health") or {}).get("cap")
    if isinstance(cap, dict):
        if "maxNodes" in cap:
            cap["maxNodes"] = _divided(cap["maxNodes"], scale)
        smallest = min(
            (p["nodes"] for p in pools if isinstance(p, dict) and isinstance(p.get("nodes"), int)), default=0
        )
        percent = cap.get("maxPercentOfPool")
        if smallest and isinstance(percent, int) and percent * smallest < 100:
            # A percentage that rounds to 0 nodes is refused (the controller could never act):
            # the smallest one that still allows one node in the smallest pool.
            cap["maxPercentOfPool"] = math.ceil(100 / smallest)
    header = f"# {source} with node counts divided by {scale} (generate.py box up --scale {scale})\n"
    return header + yaml.safe_dump(document, sort_keys=False)


def sped_spec(root: Path, name: str, speed: int, source: str) -> str:
    """Environment `name` of the checkout `root`, merged over its `extends:` chain with its
    defaults filled in and its durations divided by `speed`, as one self-contained file."""
    from generators.spec.load import load_document
    from generators.spec.schema import apply_defaults

    value = sped_up(apply_defaults(load_document(root, name).value), speed)
    header = (
        f"# {source} merged over its extends: chain, defaults written out, controller durations "
        f"divided by {speed} (generate.py box up --speed {speed})\n"
    )
    return header + yaml.safe_dump(value, sort_keys=False)


def scaled_checkout(root: Path, name: str, scale: int, folder: Path, speed: int = 1) -> Path:
    """A checkout in `folder` holding environments/ with `name` scaled (and sped up); returns
    its root."""
    if scale < 1:
        raise ScaleError(f"--scale must be a positive integer, not {scale}")
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(root / ENV_DIR, folder / ENV_DIR)
    path = folder / ENV_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ScaleError(f"{ENV_DIR}/{name}.yaml: no such environment")
    if scale > 1:
        path.write_text(
            scaled_spec(path.read_text(encoding="utf-8"), scale, f"{ENV_DIR}/{name}.yaml"), encoding="utf-8"
        )
    if speed > 1:
        path.write_text(sped_spec(folder, name, speed, f"{ENV_DIR}/{name}.yaml"), encoding="utf-8")
    return folder
