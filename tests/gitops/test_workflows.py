""".github/ and .pre-commit-config.yaml: actionlint clean, the right triggers, least
permissions, pinned actions, and every generate.py invocation accepted by the real CLI."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from generators import cli
from tests.support import ROOT, tool

from .conftest import WORKFLOWS, load_yaml

PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
VERSION_COMMENT = re.compile(r"uses: (\S+) # v\d+\.\d+\.\d+$")
WORKFLOW_FILES = sorted(WORKFLOWS.glob("*.yml"))
# Values the shell variables in workflow invocations take, for argument parsing.
SHELL_SAMPLES = {"$budget": "64000", "$ENV_NAME": "prod", "$env": "staging"}


def _workflow(name: str) -> dict[str, Any]:
    document: dict[str, Any] = load_yaml(WORKFLOWS / f"{name}.yml")
    return document


def _steps(workflow: dict[str, Any], job: str | None = None) -> list[dict[str, Any]]:
    """Every step of the workflow, or of its job `job`."""
    jobs = [workflow["jobs"][job]] if job else workflow["jobs"].values()
    return [step for each in jobs for step in each.get("steps", [])]


def _actionlint() -> Path:
    return tool("actionlint")


def _lint(binary: Path, files: list[Path]) -> subprocess.CompletedProcess[str]:
    # shellcheck, when on PATH (it is on GitHub's runners), also checks every run: script.
    return subprocess.run(
        [str(binary), "-no-color", "-oneline", *map(str, files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_actionlint_passes() -> None:
    done = _lint(_actionlint(), WORKFLOW_FILES)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    """The check above can fail: a typo'd expression context is reported."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - run: echo ${{ github.evnt.pull_request.number }}\n",
        encoding="utf-8",
    )
    done = _lint(_actionlint(), [bad])
    assert done.returncode == 1 and "evnt" in done.stdout


def test_shipped_workflows() -> None:
    assert [p.name for p in WORKFLOW_FILES] == [
        "pr-comment.yml",
        "pr.yml",
        "sync-inventory.yml",
        "verify.yml",
    ]


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_every_workflow_declares_least_permissions(path: Path) -> None:
    workflow = load_yaml(path)
    assert isinstance(workflow["permissions"], dict)  # never the broad default token
    assert all(v in ("read", "none") for v in workflow["permissions"].values())
    for job in workflow["jobs"].values():
        assert job.get("permissions", {}) != "write-all"


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_every_third_party_action_is_pinned_by_sha_with_its_version(path: Path) -> None:
    lines = [
        line.strip().removeprefix("- ")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip().removeprefix("- ").startswith("uses:")
    ]
    assert lines
    for line in lines:
        match = VERSION_COMMENT.fullmatch(line)
        assert match and PINNED.fullmatch(match.group(1)), line


def test_pr_workflow_runs_pr_code_read_only() -> None:
    workflow = _workflow("pr")
    assert set(workflow["on"]) == {"pull_request"}
    assert workflow["permissions"] == {"contents": "read"}
    assert all("permissions" not in job for job in workflow["jobs"].values())
    assert "github.event.pull_request.number" in workflow["concurrency"]["group"]
    assert workflow["concurrency"]["cancel-in-progress"] is True
    runs = " ".join(step.get("run", "") for step in _steps(workflow))
    for command in ("render --check", "validate", "diff --base HEAD^1 --format markdown --max-chars"):
        assert f"python generate.py {command}" in runs.replace("\\\n", "")
    setup = next(s for s in _steps(workflow) if s.get("uses", "").startswith("actions/setup-python@"))
    assert setup["with"]["cache"] == "pip"
    upload = next(
        s for s in _steps(workflow, "checks") if s.get("uses", "").startswith("actions/upload-artifact@")
    )
    assert upload["with"]["name"] == "pr-comment"


def test_pr_whatif_is_its_own_job_with_a_budget_and_lands_in_the_same_comment() -> None:
    """docs/whatif.md, In the pull request: the replay has its own job and time budget (the
    replay step stops first, so the upload of what it has still runs); the checks job waits
    for it even when it failed or timed out, and hands its reports to the diff."""
    workflow = _workflow("pr")
    whatif, checks = workflow["jobs"]["whatif"], workflow["jobs"]["checks"]
    assert 0 < whatif["timeout-minutes"] <= 60
    steps = _steps(workflow, "whatif")
    [replay] = [s for s in steps if "generate.py simulate" in s.get("run", "")]
    assert 0 < replay["timeout-minutes"] < whatif["timeout-minutes"]
    assert [argv[1:] for argv in _generate_invocations(replay["run"])] == [
        ["staging", "--base", "HEAD^1", "--format", "markdown"]
    ]
    # the plan first; without an environment to replay, no tool, no box (every later step but
    # the upload waits for it)
    [plan] = [s for s in steps if "python -m generators.diff.whatif plan" in s.get("run", "")]
    assert "--base HEAD^1 --out" in plan["run"] and plan["id"] == "plan"
    assert steps.index(plan) < steps.index(replay)
    later = steps[steps.index(plan) + 1 : steps.index(replay) + 1]
    assert later and all(s["if"].startswith("steps.plan.outputs.replay == 'true'") for s in later)
    fetch = [s.get("run", "") for s in steps].index("python generate.py fetch-crds")
    assert fetch < steps.index(replay)
    upload = steps[steps.index(replay) + 1]
    assert upload["uses"].startswith("actions/upload-artifact@") and upload["with"]["name"] == "whatif"
    assert upload["if"] == "${{ !cancelled() }}"
    assert checks["needs"] == "whatif" and checks["if"] == "${{ !cancelled() }}"
    check_steps = _steps(workflow, "checks")
    [download] = [s for s in check_steps if s.get("uses", "").startswith("actions/download-artifact@")]
    assert download["with"]["name"] == "whatif" and download["continue-on-error"] is True
    [diff] = [i for i, s in enumerate(check_steps) if "generate.py diff" in s.get("run", "")]
    assert check_steps.index(download) < diff
    [argv] = _generate_invocations(check_steps[diff]["run"])
    assert (
        argv[argv.index("--whatif") + 1]
        == "$RUNNER_TEMP/whatif"
        == "$RUNNER_TEMP/" + download["with"]["path"].removeprefix("${{ runner.temp }}/")
    )


def test_comment_workflow_never_runs_pr_code() -> None:
    workflow = _workflow("pr-comment")
    assert workflow["on"] == {
        "workflow_run": {"workflows": [_workflow("pr")["name"]], "types": ["completed"]}
    }
    assert workflow["permissions"] == {}
    [job] = workflow["jobs"].values()
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    steps = _steps(workflow)
    assert not any("checkout" in step.get("uses", "") for step in steps)
    runs = " ".join(step.get("run", "") for step in steps)
    assert not re.search(r"^\s*(\S*/)?(git|python3?|pip|make|bash|sh)\s", runs, re.MULTILINE)
    download = next(s for s in steps if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["name"] == "pr-comment"
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    [sticky] = [s for s in steps if s.get("uses", "").startswith("marocchino/sticky-pull-request-comment@")]
    assert sticky["with"]["header"] == "trainyard-diff"  # one comment, found again on each push


def test_verify_workflow_runs_make_test_on_main() -> None:
    workflow = _workflow("verify")
    assert workflow["on"]["push"] == {"branches": ["main"]}
    assert workflow["permissions"] == {"contents": "read"}
    runs = [step.get("run", "") for step in _steps(workflow)]
    assert "make test" in runs


def test_sync_inventory_workflow_reads_nodes_and_opens_a_pr() -> None:
    workflow = _workflow("sync-inventory")
    assert set(workflow["on"]) == {"schedule", "workflow_dispatch"}
    assert workflow["permissions"] == {"contents": "read"}
    assert set(workflow["jobs"]) == {"environments", "sync"}
    job = workflow["jobs"]["sync"]
    assert job["environment"] == "${{ matrix.env }}"
    assert job["permissions"] == {"contents": "write", "pull-requests": "write"}
    # The matrix is the environment files, not a list typed in the workflow.
    assert job["needs"] == "environments"
    assert job["strategy"]["matrix"]["env"] == "${{ fromJSON(needs.environments.outputs.names) }}"
    # Without the secret a cluster is skipped: every later step waits on the nodes step.
    later = _steps(workflow)[[s.get("id") for s in _steps(workflow)].index("nodes") + 1 :]
    assert later and all(s.get("if") == "steps.nodes.outputs.ready == 'true'" for s in later)
    # One named secret per GitHub environment: secrets[<expression>] hands the runner the
    # whole secrets context, every environment's kubeconfig included.
    envs = [step.get("env", {}) for step in _steps(workflow)]
    assert {"KUBECONFIG_DATA": "${{ secrets.KUBECONFIG }}"}.items() <= next(
        e for e in envs if "KUBECONFIG_DATA" in e
    ).items()
    for step in _steps(workflow):
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False
    runs = " ".join(step.get("run", "") for step in _steps(workflow))
    assert "kubectl get nodes -o json" in runs
    assert 'python generate.py sync-inventory "$ENV_NAME" --nodes' in runs
    assert any(s.get("uses", "").startswith("peter-evans/create-pull-request@") for s in _steps(workflow))


@pytest.mark.parametrize(
    ("name", "job", "first_use"),
    [
        ("pr", "checks", "python generate.py render --check"),
        ("pr", "whatif", 'out="$RUNNER_TEMP/whatif"\nwhile read'),
        ("verify", "test", "make test"),
    ],
)
def test_pinned_crds_are_fetched_before_they_are_needed(name: str, job: str, first_use: str) -> None:
    """GitHub's runners have no ../shared/crds: validate, the box and the tests need the
    fetched copy, cached by the lock's hash, and fetch-crds checks whatever the cache restored."""
    steps = _steps(_workflow(name), job)
    runs = [step.get("run", "") for step in steps]
    fetch = runs.index("python generate.py fetch-crds")
    [cache] = [
        i for i, step in enumerate(steps) if step.get("with", {}).get("path") == "~/.cache/trainyard/crds"
    ]
    assert steps[cache]["uses"].startswith("actions/cache@")
    assert steps[cache]["with"]["key"] == "trainyard-crds-${{ hashFiles('schemas/crds.lock') }}"
    assert cache < fetch < next(i for i, run in enumerate(runs) if run.startswith(first_use))


def _generate_invocations(text: str) -> list[list[str]]:
    """argv after `generate.py` of every invocation in shell text (continuations joined)."""
    joined = text.replace("\\\n", " ")
    found = []
    command = r"(?:^|[;&|!]|\bif|\bthen|\belse)\s*(?:\S*/)?python3? generate\.py ([^|>\n;&]*)"
    for match in re.finditer(command, joined, re.MULTILINE):
        found.append([SHELL_SAMPLES.get(word, word) for word in shlex.split(match.group(1))])
    return found


def _all_invocations() -> list[list[str]]:
    invocations = []
    for path in WORKFLOW_FILES:
        for step in _steps(load_yaml(path)):
            invocations += _generate_invocations(step.get("run", ""))
    for hook in load_yaml(ROOT / ".pre-commit-config.yaml")["repos"][0]["hooks"]:
        invocations += _generate_invocations(hook["entry"])
    return invocations


def test_every_generate_invocation_parses_with_the_real_cli() -> None:
    invocations = _all_invocations()
    assert {argv[0] for argv in invocations} == {
        "render",
        "validate",
        "diff",
        "sync-inventory",
        "fetch-crds",
        "simulate",
    }
    parser = cli.parser()
    for argv in invocations:
        try:
            parser.parse_args(argv)
        except SystemExit:
            pytest.fail(f"generate.py {shlex.join(argv)}: rejected by generators/cli.py")


def test_pre_commit_runs_format_render_check_and_validate() -> None:
    config = load_yaml(ROOT / ".pre-commit-config.yaml")
    [repo] = config["repos"]
    assert repo["repo"] == "local"
    hooks = {hook["id"]: hook for hook in repo["hooks"]}
    assert set(hooks) == {"ruff-format", "render-check", "validate"}
    # the format hook runs what `make lint` runs, on the staged Python files
    assert shlex.split(hooks["ruff-format"]["entry"]) == [
        ".venv/bin/python",
        "-m",
        "ruff",
        "format",
        "--check",
    ]
    assert "ruff format --check ." in (ROOT / "Makefile").read_text(encoding="utf-8")
    assert hooks["ruff-format"]["types"] == ["python"]
    for hook in (hooks["render-check"], hooks["validate"]):
        interpreter, script, *_ = shlex.split(hook["entry"])
        assert (ROOT / script).is_file() and interpreter.endswith("python")
        assert hook["language"] == "system" and hook["pass_filenames"] is False
        assert re.search(hook["files"], "environments/prod.yaml")
    assert shlex.split(hooks["render-check"]["entry"])[2:] == ["render", "--check"]
    assert shlex.split(hooks["validate"]["entry"])[2:] == ["validate"]


def test_dependabot_updates_actions_and_pip() -> None:
    config = load_yaml(ROOT / ".github" / "dependabot.yml")
    assert config["version"] == 2
    ecosystems = {update["package-ecosystem"] for update in config["updates"]}
    assert {"github-actions", "pip"} <= ecosystems


def test_zizmor_finds_nothing() -> None:
    """zizmor (pinned in requirements-dev.txt), offline: no finding at its default persona.
    An ignore must sit on the flagged line as `# zizmor: ignore[<audit>] <reason>`."""
    zizmor = Path(sys.executable).parent / "zizmor"  # the PyPI wheel's binary, beside python
    if not zizmor.is_file():
        pytest.fail("zizmor is not installed: pip install -r requirements-dev.txt", pytrace=False)
    command = [str(zizmor), "--offline", "--no-progress", "--format", "plain", str(ROOT / ".github")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr
    for path in sorted((ROOT / ".github").rglob("*.yml")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            ignore = re.search(r"zizmor: ignore\[[\w-]+\](.*)$", line)
            if ignore:
                reason = ignore.group(1).strip()
                assert len(reason) >= 20, f"{path}:{number}: an ignore needs its reason inline"
