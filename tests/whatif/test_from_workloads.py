"""`generate.py trace from-workloads` on real Kueue Workloads and pods (no box at run time).

The fixtures are what the pinned Kueue v0.19.2, job controller, scheduler and KWOK wrote on a
box of staging (captured once by `python -m tests.whatif.capture_workloads`; provenance in
tests/whatif/fixtures/README.md): tests/whatif/capture.yaml replayed at speed 10, then one
more job still running when `kubectl get workloads -A -o json` and `kubectl get pods -A -o
json` were read. The expected trace comes from capture.yaml, by hand:
- r1 (research, 16 x 8 GPUs, 300 s) at 0 and e1 (evals, 1 x 4 GPUs, 100 s, killed after 30 s)
  at 0; f1 (foundation, training-critical, 16 x {8 GPUs, cpu 2, 16Gi}, 120 s) at 60, which
  reclaimed from r1 (r1 ran again, whole, after f1);
- at speed 10 on the box that is 30, 10 and 12 s of wall time per pod, f1 created 6 s after
  the others; the cluster's clock is the trace's, so those are the trace's seconds now;
- tolerance: timestamps are whole seconds (up to 1 s lost at each end) and a Workload's
  conditions hold the box's start and finish latency (docs/whatif.md, Fidelity: 1 to 5 s),
  so a duration may come out up to 2 s short of or 5 s over the wall time it ran;
- still-running (research, 2 x 8 GPUs, admitted, not Finished) has no duration: left out.
Every job of a topology-aware queue carries topology preferred rack: Kueue v0.19.2 set
podSets[].topologyRequest.preferred on all four Workloads (in the fixture), though the trace
asked for it only on f1.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from generators.cli import main
from generators.model.load import load as load_env
from tests.support import ROOT
from whatif.trace import Job, load

HERE = Path(__file__).parent
WORKLOADS = HERE / "fixtures" / "workloads.json"
PODS = HERE / "fixtures" / "pods.json"
SHORT, OVER = 2, 5  # seconds a duration may come out short or over (docstring)
RACK = ("preferred", "topology.trainyard.dev/rack")


def _convert(tmp_path: Path, *extra: str) -> tuple[dict[str, Job], str]:
    out = tmp_path / "trace.yaml"
    assert main(["trace", "from-workloads", *extra, "--env", "staging", "-o", str(out)]) == 0
    trace = load(out, "trace.yaml", load_env(ROOT, "staging"))
    return {re.sub(r"-[0-9a-f]{6}$", "", j.name): j for j in trace.jobs}, out.read_text(encoding="utf-8")


def _within(measured: float, wall: float) -> bool:
    return wall - SHORT <= measured <= wall + OVER


@pytest.mark.parametrize("pods", [False, True], ids=["conditions", "pods"])
def test_a_trace_from_real_workloads_gives_back_the_jobs_that_ran(
    tmp_path: Path, pods: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = [str(WORKLOADS)] + (["--pods", str(PODS)] if pods else [])
    jobs, _ = _convert(tmp_path, *extra)
    assert sorted(jobs) == ["e1", "f1", "r1"]
    r1, f1, e1 = jobs["r1"], jobs["f1"], jobs["e1"]
    assert (r1.team, r1.tier, r1.pods, r1.gpus, r1.cpu, r1.memory) == (
        "research",
        "training",
        16,
        8,
        "1",
        "4Gi",
    )
    assert (f1.team, f1.tier, f1.pods, f1.gpus, f1.cpu, f1.memory) == (
        "foundation",
        "training-critical",
        16,
        8,
        "2",
        "16Gi",
    )
    assert (e1.team, e1.tier, e1.pods, e1.gpus) == ("evals", "training", 1, 4)
    assert (r1.at, e1.at) == (0, 0) and 5 <= f1.at <= 7, (r1.at, e1.at, f1.at)
    assert _within(r1.duration, 30) and _within(f1.duration, 12) and _within(e1.duration, 10), (
        r1.duration,
        f1.duration,
        e1.duration,
    )
    assert {j.topology for j in jobs.values()} == {RACK}
    assert all(j.failure_after is None for j in jobs.values())  # KWOK deleted e1's killed pod outright
    err = capsys.readouterr().err
    assert "3 jobs from 4 Workloads" in err
    assert re.search(r"left out 1 not Finished \(no duration yet\): research/job-still-running-", err), err


def test_pods_give_the_run_of_the_pods_not_of_the_workload(tmp_path: Path) -> None:
    """r1 was preempted: its pods of the first run are gone, the Succeeded ones ran 30 s wall
    (the last run); the conditions' PodsReady -> Finished is the same run."""
    by_pods, _ = _convert(tmp_path, str(WORKLOADS), "--pods", str(PODS))
    assert _within(by_pods["r1"].duration, 30)


def test_same_input_same_bytes(tmp_path: Path) -> None:
    _, first = _convert(tmp_path, str(WORKLOADS), "--pods", str(PODS))
    _, second = _convert(tmp_path, str(WORKLOADS), "--pods", str(PODS))
    assert first == second
    assert first.startswith("# Trace for staging from a real cluster's Kueue Workloads")


def test_a_failed_pod_becomes_the_jobs_failure(tmp_path: Path) -> None:
    """A kubelet keeps a failed pod (phase Failed, its container terminated with an exit code):
    e1's one real pod, marked so, gives failure after its run and the duration then comes from
    e1's conditions (no Succeeded pod left), which says so."""
    pods = json.loads(PODS.read_text(encoding="utf-8"))
    e1 = [p for p in pods["items"] if p["metadata"]["labels"].get("trainyard.dev/whatif-job") == "e1"]
    assert len(e1) == 1
    e1[0]["status"]["phase"] = "Failed"
    e1[0]["status"]["containerStatuses"][0]["state"]["terminated"] |= {"exitCode": 1, "reason": "Error"}
    changed = tmp_path / "pods.json"
    changed.write_text(json.dumps(pods), encoding="utf-8")
    jobs, _ = _convert(tmp_path, str(WORKLOADS), "--pods", str(changed))
    assert jobs["e1"].failure_after is not None and _within(jobs["e1"].failure_after, 10)


def test_a_repeated_job_name_gets_a_suffix(tmp_path: Path) -> None:
    workloads = json.loads(WORKLOADS.read_text(encoding="utf-8"))
    workloads["items"].append(json.loads(json.dumps(workloads["items"][0])))
    workloads["items"][-1]["metadata"]["name"] += "x"
    changed = tmp_path / "workloads.json"
    changed.write_text(json.dumps(workloads), encoding="utf-8")
    out = tmp_path / "trace.yaml"
    assert main(["trace", "from-workloads", str(changed), "--env", "staging", "-o", str(out)]) == 0
    names = [j.name for j in load(out, "trace.yaml").jobs]
    assert len(names) == len(set(names)) == 4 and any(n.endswith("-2") for n in names), names


def _broken(tmp_path: Path, edit: str) -> Path:
    """The workloads fixture with one textual edit (old => new), so the error has a real spot."""
    old, new = edit.split(" => ")
    text = WORKLOADS.read_text(encoding="utf-8")
    assert text.count(old) >= 1, old
    path = tmp_path / "workloads.json"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def _line_col(path: Path, needle: str) -> str:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in line:
            return f"{number}:{line.index(needle) + 1}"
    raise AssertionError(needle)


@pytest.mark.parametrize(
    ("edit", "spot", "message"),
    [
        (
            '"count": 1, => "count": "one",',
            '"one"',
            r"expected an integer, not 'one' \(items\[0\]\.spec\.podSets\[0\]\.count\)",
        ),
        (
            '"memory": "4Gi", => "memory": "4 gigs",',
            '"4 gigs"',
            r"not a Kubernetes quantity: '4 gigs' "
            r"\(items\[0\]\.spec\.podSets\[0\]\.template\.spec\.containers\[0\]"
            r"\.resources\.requests\.memory\); like",
        ),
        (
            '"creationTimestamp": "2026-12-01T17:19:17Z", => "creationTimestamp": "yesterday",',
            '"yesterday"',
            r"not an RFC 3339 time: 'yesterday' \(items\[0\]\.metadata\.creationTimestamp\)",
        ),
        (
            '"kind": "Workload", => "kind": "Pod",',
            '"Pod"',
            r"expected a Workload, not 'Pod' \(items\[0\]\.kind\)",
        ),
    ],
    ids=["count", "quantity", "time", "kind"],
)
def test_a_bad_workload_is_one_line_at_its_spot_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str, spot: str, message: str
) -> None:
    path = _broken(tmp_path, edit)
    out = tmp_path / "trace.yaml"
    assert main(["trace", "from-workloads", str(path), "--env", "staging", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert re.fullmatch(rf"{re.escape(str(path))}:{_line_col(path, spot)}: error: {message}.*\n", err), err
    assert "Traceback" not in err and not out.exists()


def test_not_json_and_not_a_list_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = WORKLOADS.read_text(encoding="utf-8")
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2], encoding="utf-8")  # a capture cut short
    assert main(["trace", "from-workloads", str(cut), "--env", "staging"]) == 1
    err = capsys.readouterr().err
    assert re.fullmatch(
        rf"{re.escape(str(cut))}:\d+:\d+: error: not JSON: .*; "
        r"give the output of kubectl get workloads -A -o json\n",
        err,
    ), err
    single = tmp_path / "one.json"
    single.write_text(
        json.dumps(json.loads(text)["items"][0]), encoding="utf-8"
    )  # kubectl get workload NAME -o json
    assert main(["trace", "from-workloads", str(single), "--env", "staging"]) == 1
    err = capsys.readouterr().err
    assert re.fullmatch(
        rf"{re.escape(str(single))}:1:1: error: expected a List with items \(items\); .*\n", err
    ), err


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "from-workloads", str(tmp_path / "none.json"), "--env", "staging"]) == 2
    assert main(["trace", "from-workloads", str(WORKLOADS), "--env", "stagin"]) == 2
    assert "unknown environment 'stagin'" in capsys.readouterr().err


def test_a_bad_pod_is_one_line_in_the_pods_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = PODS.read_text(encoding="utf-8")
    old = '"finishedAt": "'
    assert old in text
    path = tmp_path / "pods.json"
    path.write_text(text.replace(old, '"finishedAt": "soon', 1), encoding="utf-8")
    out = tmp_path / "trace.yaml"
    argv = [
        "trace",
        "from-workloads",
        str(WORKLOADS),
        "--env",
        "staging",
        "--pods",
        str(path),
        "-o",
        str(out),
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    spot = _line_col(path, '"soon')
    assert re.fullmatch(
        rf"{re.escape(str(path))}:{spot}: error: not an RFC 3339 time: 'soon\S*' "
        r"\(items\[\d+\]\.status\.containerStatuses\[0\]\.state\.terminated\.finishedAt\); like .*\n",
        err,
    ), err
    assert not out.exists()


def test_an_older_kueues_v1beta1_priority_class_name_gives_the_tier(tmp_path: Path) -> None:
    """Kueue v1beta1 (kubectl's view of an older Kueue) names the class in
    spec.priorityClassName: f1's, moved there, still gives training-critical."""
    workloads = json.loads(WORKLOADS.read_text(encoding="utf-8"))
    [f1] = [w for w in workloads["items"] if w["metadata"]["name"].startswith("job-f1-")]
    f1["spec"]["priorityClassName"] = f1["spec"].pop("priorityClassRef")["name"]
    changed = tmp_path / "workloads.json"
    changed.write_text(json.dumps(workloads), encoding="utf-8")
    jobs, _ = _convert(tmp_path, str(changed))
    assert jobs["f1"].tier == "training-critical"
