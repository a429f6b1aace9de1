"""The README's what-if of a shares change is a real run's output, and says what the hand
calculation says.

The README block (between BEGIN and END) is the markdown `generate.py simulate staging --base
HEAD --speed 20 --format markdown` printed in a run of tests/whatif/test_cli.py (the base:
staging as shipped; the head: train-h100 shares 50/30/20 -> 40/40/20; trace
tests/whatif/shares.yaml), copied by hand. Checked here without a box:
- the block is a report of that shape: the report's header, one row per team and tier of the
  trace (foundation and research, training), each cell `base -> head (difference)` with the
  difference the head minus the base, to the rounding of the figures (1 s, 0.1 GPU-hour;
  a hand edit of one number by more fails it);
- it says what tests/whatif/test_cli.py works out by hand: foundation waits 0 s on the base
  (it reclaims from research) and 240 s on the head (it waits for research's 300 s job),
  within that test's tolerance (+100 / -10 s of trace time); research is preempted once on
  the base and never on the head; the base's preemption line is `foundation preempted
  research: 1`, the head's `no preemptions`.
`matches_run(stdout)` holds the block against a fresh run's output (same rows, same counts and
preemptions, waits and GPU-hours within the tolerance); it needs the run of test_cli.py, whose
box fixture is boxfix's (see the last lines of this module).
"""

from __future__ import annotations

from tests.whatif.readme_block import EARLY, GPUS, LATE, block, parsed, seconds
from whatif.report import HEADER


def test_the_readme_block_is_a_report_whose_differences_add_up() -> None:
    header, rows, _ = parsed(block())
    assert header == list(HEADER)
    assert sorted(rows) == [("foundation", "training"), ("research", "training")]
    for (team, _), cells in rows.items():
        jobs, never, *waits, gpu_hours, preempted = cells
        assert jobs[:2] == ("1", "1") and never[:2] == ("0", "0"), team
        # each figure is rounded on its own, the difference from the unrounded ones: 1 unit apart
        for base, head, change in waits:
            signed = seconds(change.lstrip("+-")) * (-1 if change.startswith("-") else 1)
            assert abs(signed - (seconds(head) - seconds(base))) <= 1, (team, base, head, change)
        assert abs(float(gpu_hours[1]) - float(gpu_hours[0]) - float(gpu_hours[2])) <= 0.1 + 1e-9, team
        assert int(preempted[1]) - int(preempted[0]) == int(preempted[2]), team
        # GPU-hours: the job's GPUs x a hold of its duration (300 s research, 120 s foundation)
        # or more; research's base also holds its preempted first run
        assert float(gpu_hours[1]) >= GPUS[team] * {"foundation": 120, "research": 300}[team] / 3600 - 0.1


def test_the_readme_block_says_what_the_hand_calculation_says() -> None:
    _, rows, preemptions = parsed(block())
    foundation, research = rows[("foundation", "training")], rows[("research", "training")]
    for base, head, _ in foundation[2:5]:  # one job: p50 = p95 = max
        assert 0 <= seconds(base) <= 0 + LATE and 240 - EARLY <= seconds(head) <= 240 + LATE, (base, head)
    assert research[-1] == ("1", "0", "-1") and foundation[-1] == ("0", "0", "+0")
    assert [p.split(": ", 1)[1] for p in preemptions] == [
        "foundation preempted research: 1",
        "no preemptions",
    ]
    assert preemptions[0].startswith("Preemptions, base HEAD (COMMIT)")


# The live check: tests/whatif/test_cli.py calls matches_run() on the stdout of its own run
# (two fresh boxes), so the README's numbers are held against a real replay in every `make test`.
