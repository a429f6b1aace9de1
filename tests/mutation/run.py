"""Mutation run: apply each kept mutation (tests/mutation/mutations.py) alone, run the
behavioural tests, report killed/survived (docs/testing.md).

    .venv/bin/python -m tests.mutation.run                 # every mutation, fast tests
    .venv/bin/python -m tests.mutation.run --list          # names and what each breaks
    .venv/bin/python -m tests.mutation.run --only NAME ... # some of them
    .venv/bin/python -m tests.mutation.run --all-suites    # control-plane and slow tests too
    .venv/bin/python -m tests.mutation.run --only NAME --tests tests/diff  # only these tests

Nothing in the checkout is ever edited: the working tree (tracked and untracked files, not
ignored ones) is copied once into a temporary directory, and each mutation is applied there,
`rendered/` re-rendered there when the mutated file renders (generators/, templates/,
schemas/), the tests run there, and the file and `rendered/` put back before the next one.
The copy is a git repository of its own (two commits of that tree, for the tests that run
`generate.py diff --base HEAD^1`). It is removed at the end, on Ctrl-C too. So the checkout
cannot be left dirty.

The tests: everything under tests/ except the golden comparison (tests/test_golden.py notices
any change of output, right or wrong, so it proves nothing about correctness) and
tests/mutation (its check that the list matches the code fails under every mutation), and by
default without the `controlplane` and `slow` markers (real kube-apiserver, Kueue,
descheduler, Prometheus servers). The oracle tests (tests/oracles) run first, alone: they
render in-process, so a mutation they kill costs seconds. Only if they pass is rendered/
re-rendered and the whole selection run, stopping at the first failure (-x). Before the
mutations, the whole selection runs unmutated and must pass: a failure then is the suite's,
not a mutation's.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.mutation.mutations import MUTATIONS, Mutation
from tests.support import ROOT

RENDERS = ("generators/", "templates/", "schemas/")  # a mutation here changes rendered/
FAST = "not controlplane and not slow"
GIT_IDENTITY = (
    "-c",
    "user.name=trainyard mutation run",
    "-c",
    "user.email=mutation@trainyard.invalid",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "init.defaultBranch=main",
)
FAILED = re.compile(r"^(FAILED|ERROR) (\S+)", re.MULTILINE)


@dataclass(frozen=True)
class Result:
    mutation: Mutation
    verdict: str  # killed | survived | error
    by: str  # the first failing test, or why
    seconds: float


def copy_tree(target: Path) -> None:
    """The working tree as git sees it (tracked + untracked, minus ignored), into `target`."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    (target / ".venv").symlink_to((ROOT / ".venv").resolve())
    # A git repository of two commits with that tree: the workflow tests run
    # `generate.py diff --base HEAD^1` in the checkout, as pr.yml does.
    for step in (
        ["init", "-q"],
        ["add", "-A"],
        ["commit", "-q", "-m", "base"],
        ["commit", "-q", "--allow-empty", "-m", "head"],
    ):
        subprocess.run(["git", *GIT_IDENTITY, *step], cwd=target, capture_output=True, check=True)


# Folders whose tests guard many rules cheaply go first: the outcome of a run does not depend
# on the order, only how soon a killed mutation stops (-x).
ORDER = ("tests/oracles", "tests/policies", "tests/overflow", "tests/workflow", "tests")


def pytest_command(all_suites: bool, extra: list[str], paths: tuple[str, ...] = ORDER) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-x",
        "-rfE",
        "-p",
        "no:cacheprovider",
        "--ignore=tests/test_golden.py",
        "--ignore=tests/mutation",
        *paths,
    ]
    if not all_suites:
        command += ["-m", FAST]
    return command + extra


def run(command: list[str], cwd: Path, timeout: float) -> tuple[int | None, str]:
    """Exit code (None: timed out, the process group killed) and combined output."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # no stale .pyc of a mutated file
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out
    except BaseException:  # Ctrl-C: stop the tests, then let the caller clean up
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise


def verdict(code: int | None, out: str) -> tuple[str, str]:
    if code is None:
        return "killed", "timed out"
    if code == 0:
        return "survived", ""
    if code in (1, 2):  # test failures; 2: interrupted by a collection error (the mutation broke an import)
        failed = FAILED.search(out)
        return "killed", failed.group(2) if failed else "collection error"
    return "error", f"pytest exit {code}: {out.strip().splitlines()[-1] if out.strip() else ''}"


def mutate(
    work: Path,
    pristine_rendered: Path,
    mutation: Mutation,
    commands: tuple[list[str] | None, list[str]],
    timeout: float,
) -> Result:
    """Stage 1: the oracles (they render in-process, so rendered/ need not be re-rendered);
    stage 2, only if they pass: re-render, then every selected test. Without stage 1 (a
    selection of its own, --tests), re-render, then the selection."""
    start = time.monotonic()
    path = work / mutation.path
    original = path.read_text(encoding="utf-8")
    if original.count(mutation.old) != 1:
        return Result(
            mutation,
            "error",
            f"`old` occurs {original.count(mutation.old)} times in "
            f"{mutation.path}: the list drifted from the code",
            0.0,
        )
    renders = mutation.path.startswith(RENDERS)
    oracles, everything = commands
    rendered = False
    try:
        path.write_text(original.replace(mutation.old, mutation.new), encoding="utf-8")
        code, out = run(oracles, work, timeout) if oracles is not None else (0, "")
        if code == 0:
            if renders:
                # A generator that crashes under the mutation leaves rendered/ as it was; the
                # tests that render in-process then fail on their own.
                rendered = True
                run([sys.executable, "generate.py", "render"], work, timeout)
            code, out = run(everything, work, timeout)
    finally:
        path.write_text(original, encoding="utf-8")
        if rendered:
            shutil.rmtree(work / "rendered")
            shutil.copytree(pristine_rendered, work / "rendered")
    kind, by = verdict(code, out)
    return Result(mutation, kind, by, time.monotonic() - start)


def report(results: list[Result], total: int) -> None:
    killed = [r for r in results if r.verdict == "killed"]
    survived = [r for r in results if r.verdict == "survived"]
    errors = [r for r in results if r.verdict == "error"]
    share = f"{100 * len(killed) / len(results):.0f}%" if results else "-"
    print(
        f"\n{len(results)} of {total} mutations run: {len(killed)} killed ({share}), "
        f"{len(survived)} survived, {len(errors)} errors"
    )
    for r in survived:
        print(f"  survived: {r.mutation.name}: {r.mutation.breaks}")
    for r in errors:
        print(f"  error: {r.mutation.name}: {r.by}")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.mutation.run", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--list", action="store_true", help="print the mutations and exit")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutations")
    parser.add_argument(
        "--all-suites",
        action="store_true",
        help="include the controlplane and slow tests (real apiserver, Kueue, Prometheus)",
    )
    parser.add_argument(
        "--tests",
        nargs="+",
        metavar="PATH",
        help="run only these test paths (no oracle stage first), e.g. to show which test kills a mutation",
    )
    parser.add_argument("--skip-baseline", action="store_true", help="do not run the unmutated suite first")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per test run (default 1200)")
    parser.add_argument(
        "--shared",
        type=Path,
        default=ROOT.parent / "shared",
        help="the ../shared directory to put beside the copy (default: the checkout's)",
    )
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name:40} {m.path}: {m.breaks}")
        return 0
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    unknown = set(args.only or ()) - {m.name for m in MUTATIONS}
    if unknown:
        parser.error(f"unknown mutation(s): {', '.join(sorted(unknown))} (see --list)")
    commands: tuple[list[str] | None, list[str]]
    if args.tests:
        command = pytest_command(args.all_suites, args.pytest_args, tuple(args.tests))
        commands = (None, command)
    else:
        command = pytest_command(args.all_suites, args.pytest_args)
        commands = (pytest_command(args.all_suites, args.pytest_args, ("tests/oracles",)), command)
    results: list[Result] = []
    signal.signal(signal.SIGTERM, _interrupt)  # `kill PID` cleans up as Ctrl-C does
    with tempfile.TemporaryDirectory(prefix="trainyard-mutate-") as tmp:
        work = Path(tmp) / "repo"
        copy_tree(work)
        if args.shared.is_dir():  # ../shared beside the copy, as beside the checkout
            (Path(tmp) / "shared").symlink_to(args.shared.resolve())
        pristine = Path(tmp) / "rendered-pristine"
        shutil.copytree(work / "rendered", pristine)
        try:
            if not args.skip_baseline:
                print("baseline (unmutated): " + " ".join(command[2:]), flush=True)
                code, out = run(command, work, args.timeout)
                if code != 0:
                    print(out[-4000:])
                    print("the unmutated suite fails: fix that first (or pass pytest args to deselect)")
                    return 1
            for index, mutation in enumerate(chosen, 1):
                result = mutate(work, pristine, mutation, commands, args.timeout)
                results.append(result)
                print(
                    f"[{index:2}/{len(chosen)}] {result.verdict:8} {mutation.name:40} "
                    f"{result.seconds:5.0f}s  {result.by}",
                    flush=True,
                )
        except KeyboardInterrupt:
            print("\ninterrupted: the checkout was never edited; the temporary copy is removed")
        report(results, len(chosen))
    return 0 if all(r.verdict != "error" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
