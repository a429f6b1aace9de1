"""The trace loader (whatif/trace.py): what it accepts, and the one line it prints
for each mistake (file:line:col: error: what (trace path); hint), checked as literals. The
environment is the shipped staging (teams foundation, research, evals; tiers
training-critical and training; train-h100 with 8 GPUs per node and a rack level)."""

from __future__ import annotations

from pathlib import Path

import pytest

from generators import cli
from generators.errors import SpecError
from generators.model.environment import Environment
from generators.model.load import load as load_env
from tests.support import ROOT
from whatif.trace import Trace, load


@pytest.fixture(scope="module")
def staging() -> Environment:
    return load_env(ROOT, "staging")


def problems(tmp_path: Path, text: str, env: Environment | None) -> list[str]:
    path = tmp_path / "t.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load(path, "t.yaml", env)
    return [p.format() for p in caught.value.problems]


def loaded(tmp_path: Path, text: str, env: Environment) -> Trace:
    path = tmp_path / "t.yaml"
    path.write_text(text, encoding="utf-8")
    return load(path, "t.yaml", env)


def test_a_job_is_resolved_against_the_environment(tmp_path: Path, staging: Environment) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "jobs:\n"
        "  - {name: b, at: 1m, team: research, pods: 2,"
        " perPod: {gpus: 8, cpu: 4, memory: 16Gi},\n"
        "     duration: 1h30m, topology: {required: topology.trainyard.dev/rack},\n"
        "     failure: {after: 600}}\n"
        "  - {name: a, at: 0, team: evals, tier: training-critical, queue: evals-flex, pods: 1,\n"
        "     perPod: {gpus: 1}, duration: 90}\n",
        encoding="utf-8",
    )
    trace = load(path, "t.yaml", staging)
    first, second = trace.jobs  # sorted by arrival
    assert (first.name, first.namespace, first.queue, first.tier, first.total_gpus) == (
        "a",
        "evals",
        "evals-flex",
        "training-critical",
        1,
    )
    assert (second.name, second.at, second.namespace, second.queue, second.tier) == (
        "b",
        60.0,
        "research",
        "research",
        "training",
    )
    assert (second.duration, second.cpu, second.memory, second.failure_after) == (5400.0, "4", "16Gi", 600.0)
    assert second.topology == ("required", "topology.trainyard.dev/rack")
    assert (first.cpu, first.memory) == ("1", "4Gi")  # the documented per-pod defaults
    assert trace.span == 60 + 5400


def test_shape_mistakes_are_one_line_each_at_their_spot(tmp_path: Path) -> None:
    text = (
        "jobs:\n"
        "  - name: a\n"
        "    at: -5\n"
        "    team: research\n"
        "    pods: 0\n"
        "    perPod: {gpu: 8}\n"
        "    duration: 10x\n"
        "  - {name: a, at: 0, team: evals, pods: 1, perPod: {gpus: 1}, duration: 5}\n"
    )
    assert problems(tmp_path, text, None) == [
        "t.yaml:3:9: error: must be at least zero, not -5 (jobs[0].at)",
        "t.yaml:5:11: error: expected a whole number of at least 1, not 0 (jobs[0].pods)",
        "t.yaml:6:13: error: missing required key 'gpus' (jobs[0].perPod); "
        "GPUs per pod, e.g. perPod: {gpus: 8}",
        "t.yaml:6:14: error: unknown key 'gpu' (jobs[0].perPod.gpu); did you mean 'gpus'?",
        "t.yaml:7:15: error: '10x' is not a duration like 30s, 5m or 1h30m (jobs[0].duration)",
    ]


def test_a_missing_key_and_a_duplicate_name(tmp_path: Path) -> None:
    text = (
        "jobs:\n"
        "  - {name: a, at: 0, team: evals, pods: 1, perPod: {gpus: 1}, duration: 5}\n"
        "  - {name: a, at: 0, team: evals, pods: 1, perPod: {gpus: 1}}\n"
        "  - {name: a, at: 0, team: evals, pods: 1, perPod: {gpus: 1}, duration: 5}\n"
    )
    assert problems(tmp_path, text, None) == [
        "t.yaml:3:5: error: missing required key 'duration' (jobs[1]); "
        "a job needs name, at, team, pods, perPod, duration",
        "t.yaml:4:12: error: job name 'a' is used twice (jobs[2].name); first at jobs[0]",
    ]


def test_names_the_environment_does_not_have(tmp_path: Path, staging: Environment) -> None:
    text = (
        "jobs:\n"
        "  - {name: a, at: 0, team: reserch, pods: 1, perPod: {gpus: 1}, duration: 5}\n"
        "  - {name: b, at: 0, team: evals, namespace: research, queue: nope, pods: 1,"
        " perPod: {gpus: 1},\n"
        "     duration: 5}\n"
        "  - {name: c, at: 0, team: evals, tier: inference-prod, pods: 1,"
        " perPod: {gpus: 9}, duration: 5,\n"
        "     topology: {preferred: zone}}\n"
    )
    assert problems(tmp_path, text, staging) == [
        "t.yaml:2:28: error: environment staging has no team 'reserch' (jobs[0].team); "
        "did you mean 'research'?",
        "t.yaml:3:46: error: namespace 'research' is not team evals's (jobs[1].namespace); "
        "its namespaces: evals",
        "t.yaml:3:63: error: team evals has no queue 'nope' (jobs[1].queue); its queues: evals, evals-flex",
        "t.yaml:5:41: error: 'inference-prod' is not a training tier of staging (jobs[2].tier); "
        "training tiers: training-critical, training",
        "t.yaml:5:81: error: 9 GPUs per pod fit no node of queue evals (jobs[2].perPod.gpus); "
        "its pools have train-h100: 8 per node",
        "t.yaml:6:28: error: queue evals has no topology level 'zone' (jobs[2].topology.preferred); "
        "its levels: kubernetes.io/hostname, topology.trainyard.dev/rack",
    ]


def test_a_trace_for_another_environment_and_an_empty_file(tmp_path: Path, staging: Environment) -> None:
    assert problems(tmp_path, "environment: prod\njobs: []\n", staging) == [
        "t.yaml:1:14: error: the trace is for environment 'prod', not 'staging' (environment); "
        "replay it on its own environment, or drop the key"
    ]
    assert problems(tmp_path, "# nothing\n", None) == [
        "t.yaml:1:1: error: the file is empty (nothing but comments or blank lines); "
        "a trace holds jobs: [...] (docs/whatif.md)"
    ]
    assert problems(tmp_path, "jobz: []\n", None) == [
        "t.yaml:1:1: error: unknown key 'jobz' (jobz); did you mean 'jobs'?",
        "t.yaml:1:1: error: expected a non-empty list of jobs (jobs); see docs/whatif.md, The trace format",
    ]


def test_the_cli_prints_the_line_and_starts_no_box(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("jobs:\n  - {name: a, at: 0, team: evals, pods: 1, perPod: {gpus: 1}, duration: 0}\n")
    assert cli.main(["simulate", "staging", "--trace", str(path)]) == 1
    err = capsys.readouterr().err
    assert err == f"{path}:2:73: error: must be above zero, not 0 (jobs[0].duration)\n"


def test_a_failure_with_an_xid(tmp_path: Path, staging: Environment) -> None:
    text = (
        "jobs:\n  - {name: a, at: 0, team: evals, pods: 1, perPod: {gpus: 8}, duration: 90,"
        " failure: {after: 30, xid: 79}}\n"
    )
    [job] = loaded(tmp_path, text, staging).jobs
    assert (job.failure_after, job.failure_xid) == (30.0, 79)
    text = (
        "jobs:\n  - {name: a, at: 0, team: evals, pods: 1, perPod: {gpus: 8}, duration: 9,"
        " failure: {after: 3, xid: 0}}\n"
    )
    assert problems(tmp_path, text, staging) == [
        "t.yaml:2:101: error: expected a whole number of at least 1, not 0 (jobs[0].failure.xid)"
    ]


def test_an_inference_curve(tmp_path: Path, staging: Environment) -> None:
    text = (
        "jobs:\n  - {name: a, at: 0, team: evals, pods: 1, perPod: {gpus: 8}, duration: 90}\n"
        "inference:\n  load: [{at: 0, value: 0}, {at: 2m, value: 36}]\n  until: 10m\n"
    )
    trace = loaded(tmp_path, text, staging)
    assert trace.inference is not None
    # staging's first (only) overflow.inference service: chat-api
    assert (trace.inference.service, trace.inference.steps, trace.inference.until) == (
        "chat-api",
        ((0.0, 0.0), (120.0, 36.0)),
        600.0,
    )
    assert trace.span == 600  # the curve outlasts the job (90 s)


def test_inference_curve_mistakes(tmp_path: Path, staging: Environment) -> None:
    text = (
        "jobs:\n  - {name: a, at: 0, team: evals, pods: 1, perPod: {gpus: 8}, duration: 90}\n"
        "inference:\n"
        "  service: chat-apj\n"
        "  load: [{at: 60, value: 1}, {at: 30, value: 2}, {at: 90, value: -1}, {at: 99}]\n"
        "  until: 10\n"
    )
    # shape first, in file order; the service is checked against the environment once the
    # curve's shape holds (columns counted by hand on line 5)
    assert problems(tmp_path, text, staging) == [
        "t.yaml:5:35: error: step at 30 s is not after the one before (60 s) (inference.load[1].at)",
        "t.yaml:5:66: error: expected a number of at least zero, not -1 (inference.load[2].value)",
        "t.yaml:5:71: error: missing required key 'value' (inference.load[3]);"
        " a step is {at: SECONDS, value: NUMBER}",
        "t.yaml:6:10: error: the curve ends (10 s) before its last step (99 s) (inference.until)",
    ]
    assert problems(tmp_path, text.split("  load:")[0] + "  load: [{at: 0, value: 1}]\n", staging) == [
        "t.yaml:4:12: error: environment staging has no inference service 'chat-apj' (inference.service);"
        " did you mean 'chat-api'?"
    ]


# dev (environments/dev.yaml): its health backend is NVSentinel (no trainyard controller on
# the box to act on an XID) and it declares no overflow.inference service.
DEV_JOB = "jobs:\n  - {name: a, at: 0, team: platform, pods: 1, perPod: {gpus: 4}, duration: 9"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            DEV_JOB + ",\n     failure: {after: 3, xid: 79}}\n",
            "t.yaml:3:31: error: environment dev runs no trainyard health controller to act on an XID"
            " (jobs[0].failure.xid); drop xid (the pod is still killed), or set health.backend: trainyard",
        ),
        (
            DEV_JOB + "}\ninference: {load: [{at: 0, value: 1}]}\n",
            "t.yaml:3:12: error: environment dev declares no overflow.inference service to load (inference);"
            " drop inference, or declare the service under overflow.inference",
        ),
    ],
)
def test_what_dev_cannot_replay(tmp_path: Path, text: str, expected: str) -> None:
    assert problems(tmp_path, text, load_env(ROOT, "dev")) == [expected]


def test_a_job_named_like_the_inference_service_is_refused(tmp_path: Path, staging: Environment) -> None:
    text = (
        "jobs:\n  - {name: a, at: 0, team: evals, pods: 1, perPod: {gpus: 8}, duration: 90}\n"
        "  - {name: chat-api, at: 0, team: evals, pods: 1, perPod: {gpus: 8}, duration: 90}\n"
        "inference:\n  load: [{at: 0, value: 0}]\n"
    )
    # chat-api: staging's first overflow.inference service, the curve's default
    assert problems(tmp_path, text, staging) == [
        "t.yaml:3:12: error: job name 'chat-api' is the name of the trace's inference service "
        "(jobs[1].name); rename the job: its pods and the service's would be counted together"
    ]
    named = text.replace("inference:\n", "inference:\n  service: chat-api\n")
    assert len(problems(tmp_path, named, None)) == 1  # named in the trace: refused without the env too
