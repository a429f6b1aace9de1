#!/usr/bin/env python3
"""What-if benchmark: wall time of `generate.py simulate` on a shipped sample trace.

Runs the CLI as a user does (head only, no --base: one box per run), `--runs` times, and
prints the median box-up and replay wall times it reported, with the 1-minute load average
at the start of each run. Never used as a test: machines are noisy; read medians and the
load next to them (docs/whatif.md "Speed").

    .venv/bin/python bench/simulate.py [--env staging] [--trace traces/staging.yaml] [--speed 180]
                                     [--until SECONDS] [--scale 1] [--runs 1] [--report FILE]
    .venv/bin/python bench/simulate.py --path [--speed 144]

`--path`: where a job's wall time goes on the box (docs/whatif.md "Speed"). One box of
staging; PATH_JOBS submitted one after the other (each once the one before is Finished, so
none waits on quota), each pod running 2 s of wall; watches on the Jobs, Workloads and pods
stamp the first time each state was seen, and the gaps between them are printed per job:
Job created -> Workload created -> Admitted -> last pod created -> last ungated -> last bound
-> last Running -> last Succeeded -> Job Complete -> Workload Finished.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TIMES = re.compile(r"head: box up (\d+) s, replay (\d+) s wall for (\d+) s of trace \((\d+) jobs\)")


# (name, team, pods, GPUs per pod): four 1-pod jobs of three teams, two gangs, one more 1-pod.
PATH_JOBS = (
    ("one-a", "research", 1, 1),
    ("one-b", "research", 1, 1),
    ("one-c", "foundation", 1, 1),
    ("one-d", "evals", 1, 8),
    ("gang-a", "foundation", 16, 8),
    ("gang-b", "research", 23, 8),
    ("one-e", "research", 1, 1),
)
PATH_STEPS = (
    "workload",
    "admitted",
    "pods created",
    "ungated",
    "bound",
    "running",
    "succeeded",
    "job complete",
    "finished",
)


class _Marks:
    """When each Job of the path run first reached each step, from three watches' events
    (a pod step: when its first pod reached it; the table prints the last pod's)."""

    def __init__(self) -> None:
        import threading

        self.seen: dict[tuple[str, str], float] = {}  # (Job name, state) -> first seen
        self.pods: dict[tuple[str, str], dict[str, float]] = {}  # (Job name, state) -> pod -> first seen
        self.lock = threading.Lock()

    def mark(self, job: str, state: str, at: float, pod: str = "") -> None:
        with self.lock:
            if pod:
                self.pods.setdefault((job, state), {}).setdefault(pod, at)
            else:
                self.seen.setdefault((job, state), at)

    def on_job(self, obj: dict[str, Any], at: float, deleted: bool) -> None:
        conditions = (obj.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Complete" and c.get("status") == "True" for c in conditions):
            self.mark(obj["metadata"]["name"], "job complete", at)

    def on_workload(self, obj: dict[str, Any], at: float, deleted: bool) -> None:
        owners = [o["name"] for o in obj["metadata"].get("ownerReferences") or [] if o.get("kind") == "Job"]
        if not owners:
            return
        self.mark(owners[0], "workload", at)
        for c in (obj.get("status") or {}).get("conditions") or []:
            if c.get("status") == "True" and c.get("type") in ("Admitted", "Finished"):
                self.mark(owners[0], c["type"].lower(), at)

    def on_pod(self, obj: dict[str, Any], at: float, deleted: bool) -> None:
        job, name = obj["metadata"]["labels"].get("batch.kubernetes.io/job-name", ""), obj["metadata"]["name"]
        phase = (obj.get("status") or {}).get("phase")
        self.mark(job, "pods created", at, name)
        if not obj["spec"].get("schedulingGates"):
            self.mark(job, "ungated", at, name)
        if obj["spec"].get("nodeName"):
            self.mark(job, "bound", at, name)
        if phase in ("Running", "Succeeded"):
            self.mark(job, "running", at, name)
        if phase == "Succeeded":
            self.mark(job, "succeeded", at, name)

    def stamps(self, name: str, created: float) -> list[float]:
        with self.lock:
            return [created] + [
                self.seen[(name, s)] if (name, s) in self.seen else max(self.pods[(name, s)].values())
                for s in PATH_STEPS
            ]


def path(speed: int) -> int:
    """See the module docstring (`--path`)."""
    sys.path.insert(0, str(ROOT))
    from box.up import down, up
    from generators.model.load import load as load_env
    from whatif.replay import KUEUE_API, RUN_LABEL, Watch, job_object
    from whatif.trace import load

    marks = _Marks()
    env_name, run = "staging", "path"
    lines = [f"environment: {env_name}", "jobs:"] + [
        f"  - {{name: {n}, at: 0, team: {t}, pods: {p}, perPod: {{gpus: {g}}}, duration: {2 * speed}}}"
        for n, t, p, g in PATH_JOBS
    ]
    with tempfile.TemporaryDirectory(prefix="whatif-path-") as box_dir:
        os.environ["TRAINYARD_BOX_DIR"] = box_dir
        trace_file = Path(box_dir) / "path.yaml"
        trace_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        trace = load(trace_file, "path.yaml", load_env(ROOT, env_name))
        box = up(ROOT, env_name, 1, speed, lambda line: print(line, file=sys.stderr))
        try:
            kube = box.client()
            label = f"{RUN_LABEL}={run}"
            watches = (
                Watch(box.client, "batch/v1", "Job", marks.on_job, None, label),
                Watch(box.client, KUEUE_API, "Workload", marks.on_workload),
                Watch(box.client, "v1", "Pod", marks.on_pod, None, label),
            )
            for watch in watches:
                watch.start()
            print(f"load {os.getloadavg()[0]:.1f}; box up {box.state.up_seconds:.0f} s; speed {speed}")
            print("job (pods): " + " -> ".join(PATH_STEPS) + ", seconds of wall from the step before")
            for job in trace.jobs:
                obj = job_object(job, run, "nvidia.com/gpu", speed)
                name = obj["metadata"]["name"]
                created = time.time()
                kube.create(obj)
                while (name, "finished") not in marks.seen and time.time() < created + 120:
                    time.sleep(0.05)
                if (name, "finished") not in marks.seen:
                    print(f"{job.name}: not Finished within 120 s", file=sys.stderr)
                    return 1
                stamps = marks.stamps(name, created)
                gaps = [b - a for a, b in itertools.pairwise(stamps)]
                held = stamps[-1] - stamps[2] - 2.0  # admitted to finished, less the pods' 2 s
                print(
                    f"{job.name} ({job.pods}): "
                    + " ".join(f"{g:.3f}" for g in gaps)
                    + f"; held {held:.2f} s extra"
                )
            for watch in watches:
                watch.stop()
            kube.close()
        finally:
            down(env_name, say=lambda line: print(line, file=sys.stderr))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="staging")
    parser.add_argument("--trace", default="traces/staging.yaml")
    # 180: one day of trace in 480 s of wall, leaving the box's up (34 to 60 s measured) inside
    # the 10 minutes docs/whatif.md "Speed" aims at
    parser.add_argument("--speed", type=int, default=180)
    parser.add_argument("--until", help="simulate's --until (trace seconds, a duration, or 'end')")
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--path", action="store_true", help="time one job's path on the box instead")
    parser.add_argument("--report", type=Path, metavar="FILE", help="also write the last run's report here")
    args = parser.parse_args()
    if args.path:
        return path(args.speed)
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
        if args.report is not None:
            args.report.write_text(done.stdout, encoding="utf-8")
        # what the speed cost in fidelity: the box's latency per job in trace time, and the cut
        for line in done.stdout.splitlines():
            if line.startswith(("latency, ", "cut, ")):
                print(f"  {line}")
    print(
        f"median of {args.runs}: box up {statistics.median(ups):.0f} s, "
        f"replay {statistics.median(replays):.0f} s, command {statistics.median(walls):.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
