#!/usr/bin/env python3
"""What each speed-up layer saves on the paths users run, in instructions and CPU seconds.

Prints a table and appends every run to a JSON-lines file. Never a test: it measures.

Paths (a temporary checkout with a copy of the shipped environments and rendered/, or a
10-environment fleet made as bench/fleet.py makes it):
- `precommit-check`: `render --check` after a `render`, caches warm (the pre-commit hook);
- `ci-check`, `ci-render`: `render --check` / `render` with `CI=1` and an empty cache, as a
  fresh CI runner starts;
- `validate`, `diff`: caches warm; diff of a one-line change (`nodes: 256` -> `250` in prod)
  against the commit of the shipped tree; `ci-validate`, `ci-diff`: the same with `CI=1` and
  the cache the job's first command left (compiled templates);
- `fleet10-render`, `fleet10-check`, `fleet10-ci-check`: the same on 10 copies of prod.

Configurations: all on, all off, each layer alone on, each layer alone off. A configuration
runs only once per path for each set of layers that is in effect there: with `CI` set the
stamps and schema layers are off whatever the switch says, and a command never reaches a
layer it does not use (`render` does not reuse parses; validate and diff use no stamps).

Instruction counts (valgrind's "I refs", which load does not change; the first --counted of
the runs): the command runs pinned to one CPU (taskset), so its process pool does not fork: a
forked child's count includes its parent's up to the fork, so the counts of a pool's
processes do not add up. CPU seconds (user + sys of the process and its children, wait4's
rusage) come from every run, as users run it (with the pool). Medians of --runs.

    .venv/bin/python bench/speedups.py [--paths a,b] [--configs all-on,all-off] [--runs 3]
        [--counted 3] [--jobs 2] [--label NAME] [--out build/speedups.jsonl]
    .venv/bin/python bench/speedups.py --units ci-check:all-on,validate:reuse-off ...
    .venv/bin/python bench/speedups.py --report [--markdown] [--label NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fleet import git, run_timed, set_aside, synthesise  # noqa: E402  (bench/ is sys.path[0])

from generators import speedups  # noqa: E402
from generators.layout import cache_dir  # noqa: E402

PY = sys.executable
CLI = [PY, str(ROOT / "generate.py")]
# Shared with the user's cache: pinned tools and schemas validate needs. The layers' own
# directories (jinja/, render-stamps/, schema-valid/) are private to each configuration.
SHARED_CACHE = ("archives", "bin", "manifests", "schemas", "crds")
RENDER_LAYERS = frozenset({"templates", "shapes", "stamps", "schema"})
# cachegrind without its cache simulation counts the same instructions as callgrind's
# "Collected" (276.28 M and 276.31 M for `generate.py --help`) in ~60 % of callgrind's time.
VALGRIND = ("--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null")
_REFS = re.compile(r"^==(\d+)== I\s+refs:\s+([\d,]+)", re.M)
CHECK_LAYERS = frozenset({"templates", "shapes", "schema", "reuse"})


@dataclass(frozen=True)
class UserPath:
    """A command as users run it: on which checkout, with $CI or not, after what."""

    name: str
    fleet: int  # 0: the shipped environments
    argv: tuple[str, ...]
    reached: frozenset[str]
    ci: bool
    prepare: Callable[[Path, dict[str, str]], None] | None = None  # before each measured run
    warm: bool = False  # with CI=1: the cache an earlier step of the same job left


def _render_first(repo: Path, env: dict[str, str]) -> None:
    subprocess.run([*CLI, "-C", str(repo), "render"], env=env, check=True, capture_output=True)


PATHS = {
    p.name: p
    for p in (
        UserPath("precommit-check", 0, ("render", "--check"), RENDER_LAYERS, False, _render_first),
        UserPath("ci-check", 0, ("render", "--check"), RENDER_LAYERS, True),
        UserPath("ci-render", 0, ("render",), RENDER_LAYERS, True),
        UserPath("validate", 0, ("validate",), CHECK_LAYERS, False),
        UserPath("diff", 0, ("diff", "--base", "HEAD"), CHECK_LAYERS, False),
        UserPath("ci-validate", 0, ("validate",), CHECK_LAYERS, True, warm=True),
        UserPath("ci-diff", 0, ("diff", "--base", "HEAD"), CHECK_LAYERS, True, warm=True),
        UserPath("fleet10-render", 10, ("render",), RENDER_LAYERS, False),
        UserPath("fleet10-check", 10, ("render", "--check"), RENDER_LAYERS, False, _render_first),
        UserPath("fleet10-ci-check", 10, ("render", "--check"), RENDER_LAYERS, True),
    )
}


def configurations() -> dict[str, str]:
    """Configuration name -> TRAINYARD_SPEEDUPS value."""
    out = {"all-on": "1", "all-off": "0"}
    for layer in speedups.LAYERS:
        out[f"{layer}-only"] = layer
        out[f"{layer}-off"] = ",".join(other for other in speedups.LAYERS if other != layer)
    return out


def in_effect(path: UserPath, switch: str) -> frozenset[str]:
    """The layers that `switch` leaves in use where `path` runs (speedups.on decides)."""
    saved = {k: os.environ.get(k) for k in (speedups.SWITCH, "CI")}
    try:
        os.environ[speedups.SWITCH] = switch
        if path.ci:
            os.environ["CI"] = "1"
        else:
            os.environ.pop("CI", None)
        return frozenset(layer for layer in speedups.LAYERS if speedups.on(layer)) & path.reached
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def checkout(work: Path, path: UserPath) -> Path:
    """A fresh checkout for one (path, layers) unit: environments/ and rendered/."""
    repo = Path(tempfile.mkdtemp(prefix=f"{path.name}-", dir=work))
    if path.fleet:
        synthesise(repo, path.fleet)
    else:
        shutil.copytree(ROOT / "environments", repo / "environments")
        shutil.copytree(ROOT / "rendered", repo / "rendered")
    return repo


def fresh_cache(parent: Path) -> Path:
    """An empty cache root that still reaches the user's pinned tools and schemas."""
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=parent))
    for name in SHARED_CACHE:
        if (cache_dir() / name).exists():
            (cache / name).symlink_to(cache_dir() / name)
    return cache


def collected(stderr: str) -> int:
    """Valgrind's count for the command's own process (the first pid valgrind names)."""
    first = re.search(r"^==(\d+)==", stderr, re.M)
    counts = {pid: n.replace(",", "") for pid, n in _REFS.findall(stderr)}
    if first is None or first.group(1) not in counts:
        raise RuntimeError(f"no instruction count in: {stderr[-2000:]}")
    return int(counts[first.group(1)])


def unit(
    path: UserPath, layers: frozenset[str], switch: str, runs: int, work: Path, counted: int
) -> dict[str, Any]:
    repo = checkout(work, path)
    base_env = {k: v for k, v in os.environ.items() if k != "CI"} | {speedups.SWITCH: switch}
    if path.ci:
        base_env["CI"] = "1"
    base_env["TRAINYARD_CACHE"] = str(fresh_cache(work))
    argv = [*CLI, "-C", str(repo), *path.argv]
    if path.fleet:  # the shipped checkout has its committed rendered/
        _render_first(repo, base_env)
    if path.argv[0] == "diff":
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "shipped")
        prod = repo / "environments" / "prod.yaml"
        prod.write_text(prod.read_text().replace("    nodes: 256\n", "    nodes: 250\n", 1))

    def before(env: dict[str, str]) -> None:
        if path.ci and not path.warm:  # a fresh runner: nothing in the cache
            env["TRAINYARD_CACHE"] = str(fresh_cache(work))
        if path.name.endswith("-render") and path.fleet:
            set_aside(repo, work)
        if path.prepare:
            path.prepare(repo, env)

    ok = (0, 1) if path.argv[0] == "diff" else (0,)
    # one untimed run: bytecode of every module, and (dev paths) the caches a user has
    env = dict(base_env)
    before(env)
    run_timed(argv, repo, ok, env)
    instructions: list[int] = []
    cpus: list[float] = []
    for i in range(runs):
        env = dict(base_env)
        before(env)
        _, cpu, _ = run_timed(argv, repo, ok, env)
        cpus.append(cpu)
        if i < counted:
            env = dict(base_env) | {"PYTHONHASHSEED": "0"}
            before(env)
            proc = subprocess.run(
                ["taskset", "-c", "0", "valgrind", *VALGRIND, *argv],
                cwd=repo,
                env=env,
                capture_output=True,
                text=True,
            )
            if proc.returncode not in ok:
                raise RuntimeError(f"{path.name} {switch}: exit {proc.returncode}: {proc.stderr[-2000:]}")
            instructions.append(collected(proc.stderr))
    return {
        "path": path.name,
        "layers": sorted(layers),
        "switch": switch,
        "instructions": instructions,
        "cpu_s": [round(c, 4) for c in cpus],
        "load_1m": os.getloadavg()[0],
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


def merged(out: Path, label: str | None) -> dict[tuple[str, tuple[str, ...]], dict[str, Any]]:
    """(path, layers in effect) -> every run of it in `out` (with `label`), runs appended."""
    by: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}
    for line in out.read_text().splitlines():
        row = json.loads(line) if line.strip() else None
        if row is None or (label and row.get("label") != label):
            continue
        key = (row["path"], tuple(row["layers"]))
        if key in by:
            by[key]["instructions"] += row["instructions"]
            by[key]["cpu_s"] += row["cpu_s"]
        else:
            by[key] = row
    return by


def report(out: Path, label: str | None) -> None:
    """Medians per path and configuration, from every row of `out` (with `label`)."""
    by = merged(out, label)
    configs = configurations()
    for name in PATHS:
        path = PATHS[name]
        if not any(k[0] == name for k in by):
            continue
        print(f"\n{name}")
        print(f"  {'configuration':16} {'layers in effect':36} {'Minstr':>9} {'CPU s':>7}")
        for config, switch in configs.items():
            row = by.get((name, tuple(sorted(in_effect(path, switch)))))
            if row is None:
                continue
            instr = statistics.median(row["instructions"]) / 1e6 if row["instructions"] else float("nan")
            print(
                f"  {config:16} {','.join(row['layers']) or '-':36} {instr:>9.1f} "
                f"{statistics.median(row['cpu_s']):>7.3f}"
            )


def markdown(out: Path, label: str | None) -> None:
    """One table: a row per configuration, a column per path, "M instructions / CPU s"."""
    by = merged(out, label)
    paths = [name for name in PATHS if any(k[0] == name for k in by)]
    print("| configuration | " + " | ".join(f"`{name}`" for name in paths) + " |")
    print("|---|" + "---|" * len(paths))
    for config, switch in configurations().items():
        cells = []
        for name in paths:
            row = by.get((name, tuple(sorted(in_effect(PATHS[name], switch)))))
            if row is None or not row["instructions"]:
                cells.append("")
                continue
            instr = statistics.median(row["instructions"]) / 1e6
            cells.append(f"{instr:,.0f} / {statistics.median(row['cpu_s']):.2f}")
        print(f"| {config} | " + " | ".join(cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--configs", default=",".join(configurations()))
    parser.add_argument("--units", default="", help="PATH:CONFIG,... instead of --paths x --configs")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--counted", type=int, default=3, help="how many of the runs also count instructions")
    parser.add_argument("--label", default=None, help="stored with each run; --report shows only this label")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "speedups.jsonl")
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--markdown", action="store_true", help="with --report: one Markdown table")
    args = parser.parse_args()
    if args.report:
        (markdown if args.markdown else report)(args.out, args.label)
        return 0
    configs = configurations()
    todo: dict[tuple[str, frozenset[str]], str] = {}
    pairs = [tuple(u.split(":")) for u in args.units.split(",") if u] or [
        (name, config) for name in args.paths.split(",") for config in args.configs.split(",")
    ]
    for name, config in pairs:
        layers = in_effect(PATHS[name], configs[config])
        todo.setdefault((name, layers), configs[config])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="trainyard-speedups-") as tmp:

        def one(key: tuple[str, frozenset[str]]) -> None:
            row = unit(PATHS[key[0]], key[1], todo[key], args.runs, Path(tmp), min(args.counted, args.runs))
            row["label"] = args.label
            with args.out.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
            instr = statistics.median(row["instructions"]) / 1e6 if row["instructions"] else float("nan")
            print(
                f"{row['path']:18} {','.join(row['layers']) or '-':36} {instr:9.1f} Minstr "
                f"{statistics.median(row['cpu_s']):7.3f} CPU s  (load {row['load_1m']:.1f})",
                flush=True,
            )

        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(one, todo))
    report(args.out, args.label)
    return 0


if __name__ == "__main__":
    sys.exit(main())
