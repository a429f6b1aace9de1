"""The README's what-if block (between BEGIN and END) read as a report: its tables, its cells
`base -> head (difference)`, its durations in seconds; and `matches_run(stdout)`, which holds
the block against a fresh run's output (tests/whatif/test_readme_whatif.py says what and why;
tests/whatif/test_cli.py calls it on its own run)."""

from __future__ import annotations

import re

from tests.support import ROOT

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
