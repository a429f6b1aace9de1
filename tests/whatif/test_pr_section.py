"""The pull request's what-if (docs/whatif.md, In the pull request), without a box: which
environments the what-if job replays (`python -m generators.diff.whatif plan`), and the
section `diff --format markdown --whatif DIR` puts under the diff from what the job left.

Expected values are the spec's literals: staging ships `whatif: {trace: traces/staging.yaml,
speed: 144}`; dev and prod configure none. The replay itself is tests/whatif/test_cli.py's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from generators.diff import whatif
from tests.support import ROOT
from tests.whatif.scratch import committed, git, shares_change

COMMAND = "python generate.py simulate staging --trace traces/staging.yaml --base {base} --speed 144"
PLAN = (sys.executable, "-m", "generators.diff.whatif", "plan")
DIFF = (sys.executable, str(ROOT / "generate.py"))
REPORT = "### what-if staging: traces/staging.yaml at speed 144 (times are trace time)\n\n| team | ... |\n"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout of environments/, rendered/ and traces/ as shipped, committed once."""
    return committed(tmp_path_factory.mktemp("pr") / "repo", ("environments", "rendered", "traces"))


def test_only_staging_configures_a_trace() -> None:
    assert whatif.configured(ROOT) == [whatif.Configured("staging", "traces/staging.yaml", 144)]


def test_the_plan_replays_a_changed_environment_and_says_why_not_for_the_others(
    repo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "unchanged"
    assert whatif.plan(repo, "HEAD", out) == []
    base = git(repo, "rev-parse", "--short=12", "HEAD")
    assert (out / "staging.skipped").read_text(encoding="utf-8") == (
        f"its spec is the same as at HEAD ({base})\n"
    )
    assert sorted(p.name for p in out.iterdir()) == ["staging.skipped"]  # dev, prod: no trace
    spec = repo / "environments" / "staging.yaml"
    shipped = spec.read_text(encoding="utf-8")
    try:
        spec.write_text(shipped.replace("speed: 144}", "speed: 72}"), encoding="utf-8")
        assert whatif.plan(repo, "HEAD", tmp_path / "speed") == []  # `whatif` itself is no change
        shares_change(repo)
        out = tmp_path / "changed"
        done = subprocess.run(
            [*PLAN, "-C", str(repo), "--base", "HEAD", "--out", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert (done.returncode, done.stdout) == (0, "staging\n"), done.stderr
        assert not out.exists() or list(out.iterdir()) == []
    finally:
        spec.write_text(shipped, encoding="utf-8")


def _diff(repo: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*DIFF, "-C", str(repo), "diff", "--base", "HEAD", "--format", "markdown", *extra],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_diff_shows_each_outcome_of_the_whatif_job(repo: Path, tmp_path: Path) -> None:
    base = git(repo, "rev-parse", "--short=12", "HEAD")
    command = COMMAND.format(base=base)
    alone = _diff(repo)
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout.endswith(
        "\n\n### What-if\n\n`staging`: trace `traces/staging.yaml` at speed 144 is configured, not "
        f"replayed by this diff. Replay it: `{command}`\n"
    ), alone.stdout[-600:]
    results = tmp_path / "whatif"
    results.mkdir()
    missing = _diff(repo, "--whatif", str(results))
    assert missing.stdout.endswith(
        "`staging`: **no result**: the what-if replay of `traces/staging.yaml` failed or ran out of "
        f"its time budget (see the what-if job's log). Replay it: `{command}`\n"
    ), missing.stdout[-600:]
    (results / "staging.skipped").write_text("its spec is the same as at main\n", encoding="utf-8")
    skipped = _diff(repo, "--whatif", str(results))
    assert skipped.stdout.endswith("`staging`: not replayed: its spec is the same as at main.\n")
    (results / "staging.md").write_text(REPORT, encoding="utf-8")
    replayed = _diff(repo, "--whatif", str(results))
    assert replayed.stdout.endswith("\n\n### What-if\n\n" + REPORT), replayed.stdout[-600:]


def test_the_section_is_never_cut_and_the_comment_keeps_its_limit(repo: Path, tmp_path: Path) -> None:
    """A shares change diffs several objects; at a small --max-chars the per-object details
    give way and the what-if report stays whole."""
    spec = repo / "environments" / "staging.yaml"
    shipped = spec.read_text(encoding="utf-8")
    results = tmp_path / "whatif"
    results.mkdir()
    (results / "staging.md").write_text(REPORT, encoding="utf-8")
    try:
        shares_change(repo)
        full = _diff(repo, "--whatif", str(results))
        limit = len(full.stdout) - 200
        cut = _diff(repo, "--whatif", str(results), "--max-chars", str(limit))
    finally:
        spec.write_text(shipped, encoding="utf-8")
    assert full.returncode == 0 and "staging" in full.stdout.split("### What-if")[0]
    assert len(cut.stdout) <= limit < len(full.stdout)
    assert cut.stdout.endswith("\n\n### What-if\n\n" + REPORT)
    assert "omitted" in cut.stdout or "cut at the size limit" in cut.stdout


def test_simulate_without_a_trace_takes_the_specs_or_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    """No box: dev names no trace, so the usage error comes before anything runs."""
    from generators.cli import main

    assert main(["simulate", "dev"]) == 2
    assert capsys.readouterr().err == (
        "generate.py simulate: error: no --trace, and environments/dev.yaml has no whatif.trace\n"
    )


def test_a_trace_without_a_speed_replays_at_the_documented_default(tmp_path: Path) -> None:
    """docs/whatif.md "Fidelity": 20, the highest speed the sweep held, for the PR's replay and
    for `simulate` alike (one number: the schema's default of whatif.speed)."""
    from whatif.simulate_command import default_speed

    repo = committed(tmp_path / "repo", ("environments", "traces"))
    spec = repo / "environments" / "staging.yaml"
    spec.write_text(spec.read_text().replace("speed: 144}", "}"))
    assert whatif.configured(repo) == [whatif.Configured("staging", "traces/staging.yaml", 20)]
    assert default_speed() == 20
