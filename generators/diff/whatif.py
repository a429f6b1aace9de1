"""The what-if section of `diff --format markdown` (docs/whatif.md, In the pull request).

An environment opts in with `whatif: {trace: FILE, speed: X}` in its spec (the schema's
`whatif`). The PR workflow's what-if job asks `plan` which of those environments the branch
changes (their spec, bases merged in, against REF; `whatif` itself does not count), writes
`<env>.skipped` (one line: why not) for the others, and runs `generate.py simulate ENV
--base REF --format markdown > DIR/<env>.md` for each it names. `diff --whatif DIR` then
puts those reports under the diff, in the same comment: an environment with no file in DIR
had its replay fail or run out of the job's time budget, and says so. Without `--whatif`
the section names the command that replays each configured trace.

    python -m generators.diff.whatif plan --base REF --out DIR   # prints ENV per line
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generators.diff import gitref
from generators.layout import ENV_DIR, environment_names

TITLE = "### What-if"


@dataclass(frozen=True)
class Configured:
    env: str
    trace: str  # path from the repository root, as the spec gives it
    speed: int

    def command(self, base: str) -> str:
        return (
            f"python generate.py simulate {self.env} --trace {self.trace} --base {base} --speed {self.speed}"
        )


def _spec(root: Path, env: str) -> dict[str, Any] | None:
    """The environment's checked spec (bases merged, defaults applied); None if it has none
    or it does not load (the diff and validate report that; the what-if only skips it)."""
    from generators.errors import SpecError
    from generators.model.load import load_environment

    if not (root / ENV_DIR / f"{env}.yaml").is_file():
        return None
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # warnings are validate's to print
            return load_environment(root, env)[1]
    except SpecError:
        return None


def configured(root: Path) -> list[Configured]:
    """Environments whose spec names a what-if trace, by name."""
    out = []
    for env in environment_names(root):
        spec = _spec(root, env)
        whatif = (spec or {}).get("whatif")
        if whatif:
            out.append(Configured(env, whatif["trace"], int(whatif["speed"])))
    return out


def plan(root: Path, base_ref: str, out: Path) -> list[str]:
    """Configured environments the working tree changes against `base_ref`; for each other
    one, `out/<env>.skipped` says why it is not replayed."""
    base = gitref.resolve(root, base_ref)
    out.mkdir(parents=True, exist_ok=True)
    run = []
    with tempfile.TemporaryDirectory(prefix="trainyard-whatif-plan-") as temp:
        for path, content in gitref.read_tree(root, base.commit, (ENV_DIR,)).items():
            target = Path(temp) / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        for item in configured(root):
            head_spec = _spec(root, item.env) or {}
            base_spec = _spec(Path(temp), item.env)
            if base_spec is None:
                why = f"new or not loadable at {base.label} ({base.short}): nothing to compare with"
            elif {k: v for k, v in base_spec.items() if k != "whatif"} == {
                k: v for k, v in head_spec.items() if k != "whatif"
            }:
                why = f"its spec is the same as at {base.label} ({base.short})"
            elif not (root / item.trace).is_file():
                why = f"no trace file {item.trace} (whatif.trace)"
            else:
                run.append(item.env)
                continue
            (out / f"{item.env}.skipped").write_text(why + "\n", encoding="utf-8")
    return run


def section(root: Path, results: Path | None, base: str) -> str:
    """The markdown section, "" when no environment configures a trace. `results`: the
    what-if job's folder (see the module docstring); `base`: how the command names the base."""
    items = configured(root)
    if not items:
        return ""
    blocks = [TITLE]
    for item in items:
        report = results / f"{item.env}.md" if results else None
        skipped = results / f"{item.env}.skipped" if results else None
        if report is not None and report.is_file() and report.stat().st_size:
            blocks.append(report.read_text(encoding="utf-8").strip())
        elif skipped is not None and skipped.is_file():
            blocks.append(f"`{item.env}`: not replayed: {skipped.read_text(encoding='utf-8').strip()}.")
        elif results is not None:
            blocks.append(
                f"`{item.env}`: **no result**: the what-if replay of `{item.trace}` failed or ran out "
                f"of its time budget (see the what-if job's log). Replay it: `{item.command(base)}`"
            )
        else:
            blocks.append(
                f"`{item.env}`: trace `{item.trace}` at speed {item.speed} is configured, not "
                f"replayed by this diff. Replay it: `{item.command(base)}`"
            )
    return "\n\n".join(blocks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m generators.diff.whatif")
    sub = parser.add_subparsers(dest="command", required=True)
    planned = sub.add_parser("plan", help="print the configured environments the branch changes")
    planned.add_argument("--base", required=True, metavar="REF")
    planned.add_argument("--out", required=True, type=Path, metavar="DIR")
    planned.add_argument("-C", dest="root", type=Path, default=Path.cwd(), metavar="DIR")
    args = parser.parse_args(argv)
    try:
        envs = plan(args.root.resolve(), args.base, args.out)
    except gitref.GitError as err:
        print(f"python -m generators.diff.whatif: error: {err}", file=sys.stderr)
        return 2
    sys.stdout.write("".join(f"{env}\n" for env in envs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
