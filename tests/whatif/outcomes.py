"""Outcomes written by hand, one scenario of two teams that tests/whatif/test_report.py
reports and tests/whatif/test_horizon.py cuts at a horizon; each test works out its expected
figures from the comment below."""

from __future__ import annotations

from whatif.report import Outcome, Preemption

# Team a: a1 waits 0 and holds 16 GPUs for 1800 s (8 GPU-hours); a2 waits 600 and is preempted
# once after 900 s (4 GPU-hours of 16 GPUs), readmitted 300 s later and holds 1800 s more
# (8 GPU-hours). Team b: b1 arrives at 1000, waits 200, preempts a2, holds 64 GPUs for 3600 s
# (64 GPU-hours); b2 is never admitted before the end at 9000: it waits 9000 - 2000 = 7000.
A1 = Outcome("a1", "a", "training", 16, 0.0, ((0.0, 1800.0),), 1800.0, 9000.0)
A2 = Outcome(
    "a2",
    "a",
    "training",
    16,
    0.0,
    ((600.0, 1500.0), (1800.0, 3600.0)),
    3600.0,
    9000.0,
    preempted=(Preemption("a2", "b1", "InCohortReclamation", 1500.0),),
)
B1 = Outcome("b1", "b", "training-critical", 64, 1000.0, ((1200.0, 4800.0),), 4800.0, 9000.0)
B2 = Outcome("b2", "b", "training-critical", 64, 2000.0, (), None, 9000.0)
