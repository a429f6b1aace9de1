"""`generate.py simulate staging --base REF` through the CLI, as a reviewer runs it on a
shares change: two fresh boxes (base, then head), the markdown table base -> head.

A scratch git repository holds environments/ as shipped (the base commit), and the working
tree moves 10 points of train-h100 from foundation to research (50/30/20 -> 40/40/20).
Worked out by hand from staging's 31 schedulable nodes x 8 GPUs = 248 (largest remainder):
- base: foundation 16 nodes = 128 GPUs nominal, research 9 = 72 (75% max: 23 nodes = 184);
- head: 31 x 40% = 12.4 for foundation and for research, 6.2 for evals: floors 12 + 12 + 6 =
  30, the one node left goes to the largest remainder, a tie of .4 broken in the spec's team
  order: foundation 13 nodes = 104 GPUs, research 12 = 96.
Trace shares.yaml: r1 (research, 184 GPUs, 300 s) at 0 borrows; f1 (foundation, 128 GPUs,
120 s) at 60 finds 64 free.
- base: 128 is within foundation's nominal, so Kueue reclaims from the borrower: r1 is
  preempted by f1 (InCohortReclamation), f1 waits 0.
- head: 128 is over foundation's 104, so f1 would borrow; borrowing may only preempt
  priorities up to 100000 (borrowWithinCohort.maxPriorityThreshold) and r1 is training
  (900000): nothing is preempted and f1 waits for r1 to finish at 300: wait 240.
So the table must say foundation's wait p50 goes 0 -> 240 s and research's preemptions 1 -> 0;
waits within the tolerance of test_fidelity.py (+100 / -10 s of trace time), at speed 20, the
documented default that tests/whatif/test_speeds.py holds to that tolerance (half the replay
time of speed 10).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from box.state import BOX_DIR_ENV
from tests.support import ROOT, tools
from tests.support.box import BOX_TOOLS, log_tails
from tests.whatif.readme_block import matches_run
from tests.whatif.scratch import committed, shares_change

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

TIMEOUT = 1500  # two boxes up and down and two replays of ~50 s, on 2 busy cores
LATE, EARLY = 100, 10


def _seconds(text: str) -> int:
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    assert parts is not None and text, text
    hours, minutes, seconds = (int(p or 0) for p in parts.groups())
    return hours * 3600 + minutes * 60 + seconds


def test_a_shares_change_shows_whose_jobs_wait_and_what_is_no_longer_preempted(tmp_path: Path) -> None:
    tools(*BOX_TOOLS)  # what the two boxes run (tests/support/box.py)
    repo = committed(tmp_path / "repo", ("environments",))
    shares_change(repo)
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "generate.py"),
            "-C",
            str(repo),
            "simulate",
            "staging",
            "--trace",
            str(ROOT / "tests" / "whatif" / "shares.yaml"),
            "--base",
            "HEAD",
            "--speed",
            "20",
            "--format",
            "markdown",
        ],
        env={**os.environ, BOX_DIR_ENV: str(tmp_path / "boxes")},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    print(done.stdout)
    # a failed `up` keeps its box's logs (box/up.py); the tmp folder keeps them
    assert done.returncode == 0, done.stderr[-5000:] + log_tails(tmp_path / "boxes")
    rows = {
        line.split(" | ")[0].strip("| "): [c.strip(" |") for c in line.split(" | ")]
        for line in done.stdout.splitlines()
        if line.startswith("| ") and " -> " in line
    }
    foundation, research = rows["foundation"], rows["research"]
    waits = re.match(r"(\S+) -> (\S+) ", foundation[4])
    assert waits is not None, foundation
    base_wait, head_wait = waits.groups()
    assert 0 <= _seconds(base_wait) <= 0 + LATE, foundation
    assert 240 - EARLY <= _seconds(head_wait) <= 240 + LATE, foundation
    assert research[8].startswith("1 -> 0 (-1)"), research
    assert foundation[8].startswith("0 -> 0"), foundation
    assert "foundation preempted research: 1" in done.stdout  # base
    assert re.search(r"Preemptions, head: no preemptions", done.stdout), done.stdout
    # the README's what-if is this run's output: its numbers must hold against a fresh one
    matches_run(done.stdout)
