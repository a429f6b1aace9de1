#!/usr/bin/env python3
"""What-if benchmark: wall time of `generate.py simulate` on a shipped sample trace.

Runs the CLI as a user does (head only, no --base: one box per run), `--runs` times, and
prints the median box-up and replay wall times it reported, with the 1-minute load average
at the start of each run. Never used as a test: machines are noisy; read medians and the
load next to them (docs/whatif.md "Speed").

    .venv/bin/python bench/whatif.py [--env staging] [--trace traces/staging.yaml] [--speed 180]
                                     [--until SECONDS] [--scale 1] [--runs 1]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMES = re.compile(r"head: box up (\d+) s, replay (\d+) s wall for (\d+) s of trace \((\d+) jobs\)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="staging")
    parser.add_argument("--trace", default="traces/staging.yaml")
    # 180: one day of trace in 480 s of wall, leaving the box's up (34 to 60 s measured) inside
    # issue 23's 10 minutes (docs/whatif.md "Speed")
    parser.add_argument("--speed", type=int, default=180)
    parser.add_argument("--until", help="simulate's --until (trace seconds, a duration, or 'end')")
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    ups, replays, walls = [], [], []
    for run in range(args.runs):
        load = os.getloadavg()[0]
        with tempfile.TemporaryDirectory(prefix="whatif-bench-") as box_dir:
            began = time.monotonic()
            done = subprocess.run(
                [
                    sys.executable,
                    str(ROOT / "generate.py"),
                    "simulate",
                    args.env,
                    "--trace",
                    args.trace,
                    "--speed",
                    str(args.speed),
                    "--scale",
                    str(args.scale),
                    *(["--until", args.until] if args.until else []),
                ],
                cwd=ROOT,
                env={**os.environ, "TRAINYARD_BOX_DIR": box_dir},
                capture_output=True,
                text=True,
                check=False,
            )
            wall = time.monotonic() - began
        found = TIMES.search(done.stderr)
        if done.returncode != 0 or found is None:
            print(f"run {run + 1} failed ({done.returncode}):\n{done.stderr[-3000:]}", file=sys.stderr)
            return 1
        up, replay, span, jobs = (int(g) for g in found.groups())
        ups.append(up)
        replays.append(replay)
        walls.append(wall)
        print(
            f"run {run + 1}: load {load:.1f}; box up {up} s, replay {replay} s for {span} s of trace "
            f"({jobs} jobs, speed {args.speed}), command {wall:.0f} s"
        )
    print(
        f"median of {args.runs}: box up {statistics.median(ups):.0f} s, "
        f"replay {statistics.median(replays):.0f} s, command {statistics.median(walls):.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
