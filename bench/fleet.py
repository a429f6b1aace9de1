#!/usr/bin/env python3
"""Fleet-scale benchmark: prints a table of medians and writes a JSON result.

Synthesises fleets of N environments, each a copy of the shipped production example with
every component enabled, into a temporary checkout, and times the CLI as users run it:
cold render of the fleet, render --check with nothing changed, render of one environment,
validate, diff of a one-line change, and start-up. Anchors in the same run, on the same
objects: kubeconform alone, and `kubectl kustomize` reading and re-emitting them.
Never used as a test: machines are noisy; compare medians and ratios.

    .venv/bin/python bench/fleet.py [--sizes 1,10,50] [--runs 5] [--out build/bench.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.toolchain import ToolNotInstalled, tool_path  # noqa: E402

PY = sys.executable
TEMPLATE_ENV = "prod"


@dataclass
class Sample:
    name: str
    envs: int
    objects: int
    median_s: float
    runs: list[float]
    peak_rss_mb: float
    note: str = ""


def run_timed(argv: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one child process, measured by /usr/bin/time-like
    accounting: wait4's rusage of that child alone."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise RuntimeError(f"{' '.join(argv)} exited {code}: {err[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024


def measure(name: str, argv: list[str], cwd: Path, runs: int, envs: int, objects: int,
            before: list[str] | None = None, ok: tuple[int, ...] = (0,)) -> Sample:
    times, peaks = [], []
    for _ in range(runs):
        if before:
            subprocess.run(before, cwd=cwd, check=True, capture_output=True)
        elapsed, peak = run_timed(argv, cwd, ok)
        times.append(elapsed)
        peaks.append(peak)
    return Sample(name, envs, objects, statistics.median(times), [round(t, 4) for t in times], max(peaks))


def skipped(name: str, envs: int, objects: int, why: Exception) -> Sample:
    return Sample(name, envs, objects, math.nan, [], 0, f"skipped: {why}")


def synthesise(dest: Path, count: int) -> None:
    """dest/environments with `count` copies of the production example (and its base)."""
    env_dir = dest / "environments"
    env_dir.mkdir(parents=True)
    for base in (ROOT / "environments").glob("_*.yaml"):
        shutil.copy(base, env_dir)
    text = (ROOT / "environments" / f"{TEMPLATE_ENV}.yaml").read_text()
    for i in range(count):
        name = f"cluster-{i:03d}"
        (env_dir / f"{name}.yaml").write_text(re.sub(r"(?m)^name: .*$", f"name: {name}", text, count=1))


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def count_objects(rendered: Path) -> int:
    return sum(1 for _ in rendered.rglob("*.yaml"))


def has_command(name: str) -> bool:
    from generators.cli import COMMANDS

    return name in COMMANDS


def bench_size(count: int, runs: int, work: Path) -> list[Sample]:
    repo = work / f"fleet-{count}"
    synthesise(repo, count)
    cli = [PY, str(ROOT / "generate.py"), "-C", str(repo)]
    samples = [measure("render (cold)", [*cli, "render"], repo, runs, count, 0,
                       before=["rm", "-rf", "rendered"])]
    objects = count_objects(repo / "rendered")
    samples[0].objects = objects
    samples.append(measure("render --check (no change)", [*cli, "render", "--check"], repo, runs, count,
                           objects))
    samples.append(measure("render one env", [*cli, "render", "cluster-000"], repo, runs, 1,
                           objects // count))
    if count == max(SIZES):
        samples += bench_tools(repo, cli, runs, count, objects)
    return samples


def bench_tools(repo: Path, cli: list[str], runs: int, count: int, objects: int) -> list[Sample]:
    samples = []
    files = sorted(str(p) for p in (repo / "rendered").rglob("*.yaml"))
    if has_command("validate"):
        samples.append(measure("validate", [*cli, "validate"], repo, runs, count, objects, ok=(0, 1)))
    if has_command("diff"):
        git(repo, "init", "-q", "-b", "main")
        git(repo, "-c", "user.email=b@b", "-c", "user.name=bench", "add", "-A")
        git(repo, "-c", "user.email=b@b", "-c", "user.name=bench", "commit", "-qm", "fleet")
        env = repo / "environments" / "cluster-000.yaml"
        env.write_text(env.read_text().replace("    nodes: 256\n", "    nodes: 250\n", 1))
        samples.append(measure("diff (one-line change)", [*cli, "diff", "--base", "HEAD"], repo, runs, count,
                               objects))
        git(repo, "checkout", "-q", "--", ".")
    try:
        kubeconform = str(tool_path("kubeconform"))
        from generators.validation.schemastore import ensure_schemas

        schema_dir = ensure_schemas("1.36.2")  # the pinned CRDs (schemas/crds.lock)
        samples.append(measure("anchor: kubeconform alone", [
            kubeconform, "-strict", "-summary", "-n", "2", "-kubernetes-version", "1.36.2",
            "-schema-location", str(schema_dir), *files], repo, runs, count, objects, ok=(0, 1)))
    except (ToolNotInstalled, ImportError, OSError) as exc:
        samples.append(skipped("anchor: kubeconform alone", count, objects, exc))
    try:
        kubectl = str(tool_path("kubectl"))
        # kustomize reads every object and re-emits it: the reference's slow-but-familiar anchor.
        kdir = repo / "kustomize-anchor"
        kdir.mkdir(exist_ok=True)
        shutil.copytree(repo / "rendered", kdir / "rendered", dirs_exist_ok=True)
        resources = sorted(p.relative_to(kdir).as_posix() for p in (kdir / "rendered").rglob("*.yaml"))
        (kdir / "kustomization.yaml").write_text(json.dumps({"resources": resources}))
        samples.append(measure("anchor: kubectl kustomize", [kubectl, "kustomize", str(kdir)], repo, runs,
                               count, objects))
    except (ToolNotInstalled, KeyError) as exc:
        samples.append(skipped("anchor: kubectl kustomize", count, objects, exc))
    return samples


def startup(runs: int) -> Sample:
    return measure("start-up (--help)", [PY, str(ROOT / "generate.py"), "--help"], ROOT, runs, 0, 0)


def exponent(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of log(time) against log(objects)."""
    xs = [math.log(o) for o, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


SIZES = [1, 10, 50]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,10,50")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "bench.json")
    args = parser.parse_args()
    SIZES[:] = [int(s) for s in args.sizes.split(",")]
    samples = [startup(args.runs)]
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-") as tmp:
        for size in SIZES:
            samples += bench_size(size, args.runs, Path(tmp))
    cold = [(s.objects, s.median_s) for s in samples if s.name == "render (cold)"]
    fit = exponent(cold) if len(cold) >= 2 else math.nan
    biggest = max(SIZES)
    by_name = {s.name: s for s in samples if s.envs in (biggest, 0)}
    ratios = {}
    render_s = by_name["render (cold)"].median_s
    for anchor in ("anchor: kubeconform alone", "anchor: kubectl kustomize"):
        if anchor in by_name and not math.isnan(by_name[anchor].median_s):
            ratios[f"render / {anchor.removeprefix('anchor: ')}"] = render_s / by_name[anchor].median_s
    print(f"{'measurement':34} {'envs':>5} {'objects':>8} {'median s':>9} {'peak MB':>8}  note")
    for s in samples:
        print(f"{s.name:34} {s.envs:>5} {s.objects:>8} {s.median_s:>9.3f} {s.peak_rss_mb:>8.1f}  {s.note}")
    print(f"scaling exponent (cold render, objects vs time): {fit:.3f}")
    for name, value in ratios.items():
        print(f"ratio {name}: {value:.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"samples": [asdict(s) for s in samples], "scaling_exponent": fit,
                                    "ratios": ratios, "runs": args.runs}, indent=2, sort_keys=True) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
