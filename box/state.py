"""Where a box keeps its state, and the record `box down` reads to stop every process.

One run directory per environment, outside the checkout: $TRAINYARD_BOX_DIR/<env>, else
<tool cache>/box/<env> (~/.cache/trainyard/box/<env>). `state.json` there is rewritten after
every process start, so a `box up` that dies half-way still leaves `box down` everything it
needs: each process's session id (its process group) and its ports.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tools.toolchain import cache_dir

BOX_DIR_ENV = "TRAINYARD_BOX_DIR"


def run_dir(env: str) -> Path:
    """The run directory of environment `env`'s box."""
    base = os.environ.get(BOX_DIR_ENV)
    return (Path(base).expanduser() if base else cache_dir() / "box") / env


@dataclass
class Process:
    """A process the box started outside kwokctl (Kueue, later the gate and friends)."""

    name: str
    pgid: int
    ports: list[int]
    log: str


@dataclass
class State:
    env: str
    scale: int
    cluster: str  # kwokctl cluster name
    speed: int = 1  # controller durations divided by this (box/speed.py)
    kubernetes: str = ""  # `--kubernetes` minor, e.g. "1.35"; empty: the environment's own
    kubeconfig: str = ""
    prometheus: str = ""  # its URL, once it runs
    processes: list[Process] = field(default_factory=list)
    ready: bool = False  # box up finished
    up_seconds: float = 0.0

    @staticmethod
    def path(folder: Path) -> Path:
        return folder / "state.json"

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / "state.json.tmp"
        temporary.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")
        temporary.replace(self.path(folder))  # a reader never sees half a record

    @classmethod
    def load(cls, folder: Path) -> State | None:
        try:
            raw = json.loads(cls.path(folder).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        processes = [Process(**p) for p in raw.pop("processes", [])]
        return cls(**raw, processes=processes)
