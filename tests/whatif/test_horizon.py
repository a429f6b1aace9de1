"""The horizon (`simulate --until SECONDS`, or the trace's `until:`; whatif/horizon.py):
the replay stops at that trace second and every figure is cut there. Unit tests with literals
(no box) for the cut accounting, the trace key and the command line's one-line errors. The box
test that the replay stops there on the real controllers runs on test_fidelity.py's box
(`test_the_replay_stops_at_the_horizon`, worked out by hand in its docstring): one box fewer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from generators import cli
from generators.errors import SpecError
from tests.whatif.outcomes import A1, A2, B1, B2
from whatif import horizon
from whatif.report import Bound, Cut, Quarantine, Side, text
from whatif.trace import load

# tests/whatif/outcomes.py's scenario (a1 holds 0 to 1800; a2 arrives at 0, holds 600 to
# 1500, is preempted by b1 at 1500, holds again 1800 to 3600; b1 arrives at 1000, holds 1200
# to 4800; b2 arrives at 2000, never admitted), cut at HORIZON = 1600 unless a test says.
HORIZON = 1600.0


def test_a_running_job_counts_its_gpu_hours_up_to_the_horizon() -> None:
    a1 = horizon.outcome(A1, HORIZON)
    assert a1.admissions == ((0.0, 1600.0),)
    assert a1.gpu_hours == 16 * 1600 / 3600  # not 16 x 1800 s: its finish at 1800 is past it
    assert (a1.finished, a1.ended, a1.wait) == (None, 1600.0, 0.0)


def test_a_job_admitted_only_after_the_horizon_never_was_and_waits_up_to_it() -> None:
    b1 = horizon.outcome(B1, 1100.0)  # b1 arrived at 1000, was admitted at 1200
    assert b1.admissions == ()
    assert b1.wait == 100.0  # 1100 - 1000
    assert b1.gpu_hours == 0.0


def test_an_admission_and_a_preemption_after_the_horizon_did_not_happen() -> None:
    a2 = horizon.outcome(A2, HORIZON)
    assert a2.admissions == ((600.0, 1500.0),)  # its second admission, at 1800, is past it
    assert a2.finished is None
    assert a2.preempted == A2.preempted  # at 1500, before it
    early = horizon.outcome(A2, 1400.0)
    assert early.admissions == ((600.0, 1400.0),)
    assert early.preempted == ()  # preempted at 1500: not yet


def test_an_arrival_after_the_horizon_waits_nothing() -> None:
    b2 = horizon.outcome(B2, HORIZON)  # arrived at 2000
    assert (b2.arrived, b2.wait, b2.admissions) == (1600.0, 0.0, ())


def test_pods_and_quarantines_are_cut_at_the_horizon() -> None:
    pods = (
        Bound("a1", "p", "n1", 8, 150.0, 1500.0),
        Bound("a2", "p", "n2", 8, 1500.0, 1600.0),
        Bound("b1", "p", "n3", 8, 0.0, 400.0),
    )
    taints = (Quarantine("n1", "p", "xid", 500.0, 1600.0), Quarantine("n2", "p", "xid", 1001.0, 1600.0))
    outcomes, bound, quarantines = horizon.cut((A1,), pods, taints, 1000.0)
    assert bound == (Bound("a1", "p", "n1", 8, 150.0, 1000.0), Bound("b1", "p", "n3", 8, 0.0, 400.0))
    assert quarantines == (Quarantine("n1", "p", "xid", 500.0, 1000.0),)
    assert outcomes == (horizon.outcome(A1, 1000.0),)


def test_still_counts_never_admitted_and_running_at_the_horizon() -> None:
    outcomes, _, _ = horizon.cut((A1, A2, B1, B2), (), (), HORIZON)
    # b2 never admitted; a1 and b1 hold quota at 1600; a2 was evicted at 1500 and waits again
    assert horizon.still(outcomes) == (1, 2)


def test_the_report_says_the_replay_was_cut() -> None:
    outcomes, _, _ = horizon.cut((A1, B2), (), (), HORIZON)
    head = Side("head", outcomes, cut=Cut(HORIZON, 1, 1, 2))
    base = Side("base main", outcomes)
    lines = text(head, base, "t").splitlines()
    assert lines[-1] == (
        "cut, head: the replay stopped at 26m40s of trace: 1 job never admitted by then "
        "(their wait up to it), 1 running (their GPU-hours up to it); 2 jobs arriving after it not submitted"
    )
    assert not any(line.startswith("cut, base") for line in lines)  # the base ran to its end


def test_the_trace_may_set_its_horizon(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    job = "  - {name: a, at: 0, team: evals, pods: 1, perPod: {gpus: 1}, duration: 90}\n"
    path.write_text(f"until: 24h\njobs:\n{job}", encoding="utf-8")
    assert load(path, "t.yaml").until == 86400.0
    path.write_text(f"jobs:\n{job}", encoding="utf-8")
    assert load(path, "t.yaml").until is None
    path.write_text(f"until: 0\njobs:\n{job}", encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load(path, "t.yaml")
    assert [p.format() for p in caught.value.problems] == [
        "t.yaml:1:8: error: must be above zero, not 0 (until)"
    ]
    path.write_text(f"until: 30\njobs:\n{job.replace('at: 0', 'at: 30')}", encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load(path, "t.yaml")
    assert [p.format() for p in caught.value.problems] == [
        "t.yaml:1:8: error: no job arrives before the trace's horizon (30 s; the first at 30 s) (until); "
        "raise until, or drop it to replay until every job finished"
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("tomorrow", "--until takes trace seconds or a duration like 24h, or 'end', not 'tomorrow'"),
        ("0", "--until must be above zero, not '0'"),
        ("-5", "--until takes trace seconds or a duration like 24h, or 'end', not '-5'"),
        ("5", "--until 5: no job of the trace arrives before it (the first at 5 s)"),
    ],
)
def test_a_bad_until_is_one_usage_line_and_no_box(
    value: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("jobs:\n  - {name: a, at: 5, team: evals, pods: 1, perPod: {gpus: 1}, duration: 9}\n")
    assert cli.main(["simulate", "staging", "--trace", str(path), f"--until={value}"]) == 2
    assert capsys.readouterr().err == f"generate.py simulate: error: {message}\n"
