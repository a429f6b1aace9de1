#!/usr/bin/env python3
"""Fleet-scale benchmark: prints a table of medians and writes a JSON result.

Synthesises fleets of N environments, each a copy of the shipped production example with
every component enabled, into a temporary checkout, and times the CLI as users run it:
cold render of the fleet, render --check with nothing changed, render of one environment,
validate, diff of a one-line change, and start-up; plus the Python work alone (load, render,
policies: bench/python_work.py). Anchors in the same run, on the same objects: kubeconform
alone, and `kubectl kustomize` reading and re-emitting them.
Never used as a test: machines are noisy; compare medians and ratios, and read the load
average printed next to each number (the 1-minute load when that measurement started).
The speed-ups (generators/speedups) follow TRAINYARD_SPEEDUPS as every command does: run
once as is and once with TRAINYARD_SPEEDUPS=0 to see what they save together;
bench/speedups.py counts what each layer saves, path by path, in instructions.

    .venv/bin/python bench/fleet.py [--sizes 1,10,50] [--runs 5] [--out build/bench.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generators import speedups  # noqa: E402
from generators.components.registry import NAMES as COMPONENTS  # noqa: E402
from generators.layout import is_installer_input  # noqa: E402
from tools.toolchain import ToolNotInstalled, tool_path  # noqa: E402

PY = sys.executable
TEMPLATE_ENV = "prod"
KUBERNETES_VERSION = "1.36.2"
# The targets of docs/performance.md (medians on the 2-core machine), for the largest fleet.
TARGETS_S = {
    "render (cold)": 3.0,
    "render --check (no change)": 1.5,
    "render one env": 0.5,
    "start-up (--help)": 0.15,
}
TARGET_RSS_MB = 300.0
TARGET_RATIO = 1.0  # python work / kubeconform alone
TARGET_EXPONENT = 1.1


@dataclass
class Sample:
    name: str
    envs: int
    objects: int
    median_s: float
    cpu_s: float  # median user+sys CPU seconds of the child: less sensitive to load than wall
    runs: list[float]
    peak_rss_mb: float
    load_1m: float
    note: str = ""


def run_timed(
    argv: list[str], cwd: Path, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None
) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one child process, from wait4's rusage:
    CPU includes the child's own waited-for children (a process pool's workers); RSS is the
    largest single process of that tree, not their sum."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, **(env or {})}
    )
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise RuntimeError(f"{' '.join(argv)} exited {code}: {err[-2000:]}")
    if proc.stderr:
        proc.stderr.close()
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(
    name: str,
    argv: list[str],
    cwd: Path,
    runs: int,
    envs: int,
    objects: int,
    before: Callable[[], None] | None = None,
    ok: tuple[int, ...] = (0,),
    note: str = "",
    env: dict[str, str] | None = None,
) -> Sample:
    load = os.getloadavg()[0]
    times, cpus, peaks = [], [], []
    for _ in range(runs):
        if before:
            before()
        elapsed, cpu, peak = run_timed(argv, cwd, ok, env)
        times.append(elapsed)
        cpus.append(cpu)
        peaks.append(peak)
    return Sample(
        name,
        envs,
        objects,
        statistics.median(times),
        statistics.median(cpus),
        [round(t, 4) for t in times],
        max(peaks),
        load,
        note,
    )


def skipped(name: str, envs: int, objects: int, why: Exception) -> Sample:
    return Sample(name, envs, objects, math.nan, math.nan, [], 0, os.getloadavg()[0], f"skipped: {why}")


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


def check_components(repo: Path) -> None:
    """Every component renders something for the synthetic environment (else the fleet is
    smaller than production and the numbers flatter us)."""
    rendered = repo / "rendered" / "cluster-000"
    missing = [c for c in COMPONENTS if not any((rendered / c).rglob("*.yaml"))]
    if missing:
        raise SystemExit(f"bench: the synthetic environment renders nothing for {', '.join(missing)}")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=bench@example.invalid", "-c", "user.name=bench", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def set_aside(repo: Path, work: Path) -> None:
    """Move rendered/ out of the way for a cold render, to be deleted with `work` at the end.
    Not `rm -rf`: ext4 frees a deleted tree's inodes after rm returns, and the render that
    followed paid for it in system time (8,050 files: 0.3 s of sys in a fresh directory, 3 to
    6 s after an rm -rf, growing run by run; wall 1.6-1.9 s against 3.2-5.4 s, 2026-12-01)."""
    if (repo / "rendered").exists():
        trash = work / "set-aside"
        trash.mkdir(exist_ok=True)
        (repo / "rendered").rename(trash / f"{repo.name}-{len(list(trash.iterdir()))}")


def count_objects(rendered: Path) -> int:
    return sum(1 for _ in rendered.rglob("*.yaml"))


def bench_size(count: int, runs: int, work: Path, biggest: bool) -> list[Sample]:
    repo = work / f"fleet-{count}"
    synthesise(repo, count)
    cli = [PY, str(ROOT / "generate.py"), "-C", str(repo)]
    samples = [
        measure("render (cold)", [*cli, "render"], repo, runs, count, 0, before=lambda: set_aside(repo, work))
    ]
    check_components(repo)
    objects = count_objects(repo / "rendered")
    samples[0].objects = objects
    stamps = (
        "stamps from the render above vouch for every environment"
        if speedups.on("stamps")
        else "stamps off: renders every environment"
    )
    samples.append(
        measure(
            "render --check (no change)", [*cli, "render", "--check"], repo, runs, count, objects, note=stamps
        )
    )
    samples.append(
        measure(
            "render --check, no stamps",
            [*cli, "render", "--check"],
            repo,
            runs,
            count,
            objects,
            env={"CI": "true"},
            note="$CI set, as in CI: renders every environment",
        )
    )
    samples.append(
        measure("render one env", [*cli, "render", "cluster-000"], repo, runs, 1, objects // count)
    )
    samples.append(
        measure(
            "python work (load+render+policies)",
            [PY, str(ROOT / "bench" / "python_work.py"), str(repo)],
            repo,
            runs,
            count,
            objects,
        )
    )
    if biggest:
        samples += bench_validate_diff(repo, cli, runs, count, objects)
        samples += bench_anchors(repo, runs, count, objects)
    return samples


def bench_validate_diff(repo: Path, cli: list[str], runs: int, count: int, objects: int) -> list[Sample]:
    check = subprocess.run([*cli, "validate"], cwd=repo, capture_output=True, text=True)
    note = "clean" if check.returncode == 0 else f"exit {check.returncode}: {check.stdout[:200]!r}"
    samples = [measure("validate", [*cli, "validate"], repo, runs, count, objects, ok=(0, 1), note=note)]
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "fleet")
    env = repo / "environments" / "cluster-000.yaml"
    before = env.read_text()
    env.write_text(before.replace("    nodes: 256\n", "    nodes: 250\n", 1))
    shown = subprocess.run(
        [*cli, "diff", "--base", "HEAD", "--no-color"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    samples.append(
        measure(
            "diff (one-line change)",
            [*cli, "diff", "--base", "HEAD"],
            repo,
            runs,
            count,
            objects,
            note=f"{len(shown.splitlines())} lines of output",
        )
    )
    env.write_text(before)
    return samples


def bench_anchors(repo: Path, runs: int, count: int, objects: int) -> list[Sample]:
    samples = []
    files = sorted(str(p) for p in object_files(repo))
    try:
        from generators.validation.kubeconform import WORKERS
        from generators.validation.schemastore import ensure_schemas

        schema_dir = ensure_schemas(KUBERNETES_VERSION)
        # The flags `validate` uses, over the whole fleet in ONE process: kubeconform's best case.
        samples.append(
            measure(
                "anchor: kubeconform alone",
                [
                    str(tool_path("kubeconform")),
                    "-strict",
                    "-summary",
                    "-verbose",
                    "-output",
                    "json",
                    "-n",
                    str(WORKERS),
                    "-kubernetes-version",
                    KUBERNETES_VERSION,
                    "-schema-location",
                    str(schema_dir),
                    *files,
                ],
                repo,
                runs,
                count,
                objects,
            )
        )
    except Exception as exc:  # no binary, no schemas: report the anchor as skipped, keep the rest
        samples.append(skipped("anchor: kubeconform alone", count, objects, exc))
    try:
        kubectl = str(tool_path("kubectl"))
        if not Path(kubectl).is_file():
            raise ToolNotInstalled(f"{kubectl} is not built yet")
        samples.append(
            measure(
                "anchor: kubectl kustomize",
                kustomize_loop(repo, kubectl),
                repo,
                runs,
                count,
                objects,
                note="one `kubectl kustomize` per environment",
            )
        )
    except Exception as exc:  # not built yet (another engineer's build), or it failed
        samples.append(skipped("anchor: kubectl kustomize", count, objects, exc))
    return samples


def object_files(repo: Path) -> list[Path]:
    """Rendered object files: not rendered/<env>/installers/ (other installers' values)."""
    rendered = repo / "rendered"
    return [
        p
        for p in sorted(rendered.rglob("*.yaml"))
        if not is_installer_input(p.relative_to(rendered).as_posix().split("/", 1)[1])
    ]


def kustomize_loop(repo: Path, kubectl: str) -> list[str]:
    """A shell loop running `kubectl kustomize` once per environment (as Argo CD renders one
    Application each): every object is read and re-emitted. One kustomization over the whole
    fleet is impossible: environments hold objects with the same ids."""
    kdir = repo / "kustomize-anchor"
    for env_dir in sorted((repo / "rendered").iterdir()):
        target = kdir / env_dir.name
        shutil.copytree(env_dir, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("installers"))
        resources = sorted(p.relative_to(target).as_posix() for p in target.rglob("*.yaml"))
        (target / "kustomization.yaml").write_text(json.dumps({"resources": resources}))
    loop = 'for d in "$@"; do "$0" kustomize "$d" >/dev/null || exit 1; done'
    return ["sh", "-c", loop, kubectl, *(str(d) for d in sorted(kdir.iterdir()))]


def warm_up(work: Path) -> None:
    """One untimed render and validate, so that every module's bytecode is cached (a fresh
    virtualenv would otherwise charge compilation to the first measured run)."""
    repo = work / "warm-up"
    synthesise(repo, 1)
    cli = [PY, str(ROOT / "generate.py"), "-C", str(repo)]
    work_script = [PY, str(ROOT / "bench" / "python_work.py"), str(repo)]
    for argv in ([*cli, "render"], [*cli, "validate"], work_script):
        subprocess.run(argv, cwd=repo, capture_output=True, check=False)


def startup(runs: int) -> Sample:
    return measure("start-up (--help)", [PY, str(ROOT / "generate.py"), "--help"], ROOT, runs, 0, 0)


def exponent(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of log(time) against log(objects)."""
    if len(points) < 2:
        return math.nan
    xs = [math.log(o) for o, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def scaling(samples: list[Sample]) -> dict[str, float]:
    """Fitted exponents, of wall and of CPU time. Over all sizes the fixed cost (interpreter,
    imports) pulls the slope below 1; the marginal one (time minus the 1-environment time,
    from the second size on) shows whether the per-object cost grows with the fleet. The
    wall-clock marginal also sees the pool switch on between 1 and 10 environments; CPU
    time does not, so it is the better test of the per-object cost."""
    out = {}
    for name in ("render (cold)", "render --check, no stamps", "python work (load+render+policies)"):
        for label, points in (
            ("", sorted((s.objects, s.median_s) for s in samples if s.name == name)),
            ("CPU ", sorted((s.objects, s.cpu_s) for s in samples if s.name == name)),
        ):
            out[f"{name}: {label}all sizes"] = exponent(points)
            if len(points) >= 3:
                (o1, t1), rest = points[0], points[1:]
                out[f"{name}: {label}marginal"] = exponent([(o - o1, t - t1) for o, t in rest if t > t1])
    return out


def ratios(by_name: dict[str, Sample]) -> dict[str, float]:
    out = {}
    pairs = [
        ("python work (load+render+policies)", "anchor: kubeconform alone"),
        ("render (cold)", "anchor: kubeconform alone"),
        ("validate", "anchor: kubeconform alone"),
        ("render (cold)", "anchor: kubectl kustomize"),
        ("python work (load+render+policies)", "anchor: kubectl kustomize"),
    ]
    for ours, anchor in pairs:
        if ours in by_name and anchor in by_name and not math.isnan(by_name[anchor].median_s):
            label = f"{ours} / {anchor.removeprefix('anchor: ')}"
            out[label] = by_name[ours].median_s / by_name[anchor].median_s
    return out


def verdicts(by_name: dict[str, Sample], ratio: dict[str, float], fits: dict[str, float]) -> list[str]:
    lines = []
    for name, target in TARGETS_S.items():
        got = by_name[name].median_s
        lines.append(f"{name}: {got:.3f} s <= {target} s: {'met' if got <= target else 'MISSED'}")
    peak = max(s.peak_rss_mb for s in by_name.values())
    lines.append(
        f"peak RSS (largest process): {peak:.0f} MB <= {TARGET_RSS_MB:.0f} MB: "
        f"{'met' if peak <= TARGET_RSS_MB else 'MISSED'}"
    )
    key = "python work (load+render+policies) / kubeconform alone"
    if key in ratio:
        lines.append(
            f"{key}: {ratio[key]:.2f} <= {TARGET_RATIO}: {'met' if ratio[key] <= TARGET_RATIO else 'MISSED'}"
        )
    fit = fits.get("render (cold): all sizes", math.nan)
    if not math.isnan(fit):
        lines.append(
            f"scaling exponent (render, all sizes): {fit:.2f} <= {TARGET_EXPONENT}: "
            f"{'met' if fit <= TARGET_EXPONENT else 'MISSED'}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", default="1,10,50")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "bench.json")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    started = os.getloadavg()
    switch = os.environ.get(speedups.SWITCH, "1")
    layers = [layer for layer in speedups.LAYERS if speedups.on(layer)]
    print(f"{speedups.SWITCH}={switch}: layers on: {', '.join(layers) or 'none'}")
    with tempfile.TemporaryDirectory(prefix="trainyard-bench-") as tmp:
        warm_up(Path(tmp))
        samples = [startup(args.runs)]
        for size in sizes:
            samples += bench_size(size, args.runs, Path(tmp), size == sizes[-1])
    fits = scaling(samples)
    by_name = {s.name: s for s in samples if s.envs in (sizes[-1], 0) or s.name == "render one env"}
    ratio = ratios(by_name)
    print(
        f"{'measurement':36} {'envs':>4} {'objects':>7} {'median s':>8} {'cpu s':>7} {'peak MB':>7} "
        f"{'load':>5}  note"
    )
    for s in samples:
        print(
            f"{s.name:36} {s.envs:>4} {s.objects:>7} {s.median_s:>8.3f} {s.cpu_s:>7.3f} "
            f"{s.peak_rss_mb:>7.1f} {s.load_1m:>5.1f}  {s.note}"
        )
    for name, value in fits.items():
        print(f"scaling exponent, {name}: {value:.3f}")
    for name, value in ratio.items():
        print(f"ratio {name}: {value:.2f}")
    verdict = verdicts(by_name, ratio, fits)
    print("\n".join(verdict))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "samples": [asdict(s) for s in samples],
                "scaling_exponents": fits,
                "ratios": ratio,
                "verdicts": verdict,
                "runs": args.runs,
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "load_avg_start": started,
                "load_avg_end": os.getloadavg(),
                "speedups": switch,
            },
            indent=2,
            sort_keys=True,
        )
        + "\n"
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
