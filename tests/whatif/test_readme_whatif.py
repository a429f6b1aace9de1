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
box fixture is boxfix's (see the module's last lines).
"""

from __future__ import annotations

import re

from tests.support import ROOT
from whatif.report import HEADER

BEGIN = "<!-- readme-whatif: a run's output, checked by tests/whatif/test_readme_whatif.py -->"
END = "<!-- /readme-whatif -->"
LATE, EARLY = 100, 10  # tests/whatif/test_cli.py: trace seconds a wait may come out late, early
GPUS = {"foundation": 128, "research": 184}  # the trace's jobs: 16 and 23 nodes of 8 GPUs


def block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1, "README: the what-if block's markers"
    return text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()


def seconds(text: str) -> int:
    """42s, 4m05s, 1h05m (whatif/report.py duration) in seconds."""
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    assert parts is not None and text, text
    hours, minutes, secs = (int(p or 0) for p in parts.groups())
    return hours * 3600 + minutes * 60 + secs


Cell = tuple[str, str, str]  # base, head, difference ("" for counts without one)


def _cell(text: str) -> Cell:
    found = re.fullmatch(r"(\S+) -> (\S+)(?: \((\S+)\))?", text)
    assert found is not None, text
    return found.group(1), found.group(2), found.group(3) or ""


def tables(markdown: str) -> list[list[str]]:
    """The markdown's tables, each its lines (header, rule, rows), in order."""
    found: list[list[str]] = []
    previous = False
    for line in markdown.splitlines():
        row = line.startswith("| ")
        if row and not previous:
            found.append([])
        if row:
            found[-1].append(line)
        previous = row
    return found


def parsed(markdown: str) -> tuple[list[str], dict[tuple[str, str], list[Cell]], list[str]]:
    """(header cells, rows by (team, tier), the Preemptions lines with the base's commit out)."""
    lines = tables(markdown)[0]  # the teams' table; the pools' and providers' follow it
    assert len(lines) >= 3 and set(lines[1].replace("|", "").split()) == {"---"}, markdown
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[(cells[0], cells[1])] = [_cell(c) for c in cells[2:]]
    preemptions = [
        re.sub(r"\([0-9a-f]{12}\)", "(COMMIT)", line)
        for line in markdown.splitlines()
        if line.startswith("Preemptions, ")
    ]
    return header, rows, preemptions


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


def title(markdown: str) -> str:
    """The report's `### what-if ...` line."""
    [line] = [line for line in markdown.splitlines() if line.startswith("### what-if ")]
    return line


def matches_run(stdout: str) -> None:
    """The README block against a fresh run of tests/whatif/test_cli.py (its stdout)."""
    header, rows, preemptions = parsed(block())
    fresh_header, fresh_rows, fresh_preemptions = parsed(stdout)
    assert (header, sorted(rows), preemptions) == (fresh_header, sorted(fresh_rows), fresh_preemptions)
    # the title names the trace and the speed: the README says the speed the run used
    assert title(block()) == title(stdout.replace(f"{ROOT}/", "")), (title(block()), title(stdout))
    for key, cells in rows.items():
        fresh = fresh_rows[key]
        assert (cells[0], cells[1], cells[-1]) == (fresh[0], fresh[1], fresh[-1]), key
        for ours, theirs in zip(cells[2:5], fresh[2:5], strict=True):
            for side in (0, 1):
                assert abs(seconds(ours[side]) - seconds(theirs[side])) <= LATE, (key, ours, theirs)
        for side in (0, 1):
            drift = abs(float(cells[5][side]) - float(fresh[5][side]))
            assert drift <= GPUS[key[0]] * LATE / 3600, (key, cells[5], fresh[5])


# The live check: tests/whatif/test_cli.py calls matches_run() on the stdout of its own run
# (two fresh boxes), so the README's numbers are held against a real replay in every `make test`.
