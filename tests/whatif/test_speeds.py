"""Two speeds give the same results: two-teams.yaml replayed at speed 20 on a box
of staging --speed 20 gives the waits worked out by hand in tests/whatif/test_fidelity.py
(0, 0, 90, 40 s), within the same tolerance in trace time as at speed 10 (+100 / -10 s),
and each job holds its quota for its 100 s within it. At speed 20 that tolerance is +5 / -0.5
s of wall time against the box's 3 to 5 s of latency per job (docs/whatif.md, Fidelity): this
module is the sweep's upper point, and the speed that holds is the documented default.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.whatif.replaying import ANALYTIC_WAITS, EARLY, LATE, RUN, box_at, by_job, replay_trace

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]
SWEEP = 20


@pytest.fixture(scope="module")
def box(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    yield from box_at(request, tmp_path_factory, SWEEP)


def test_two_teams_at_speed_20_waits_as_at_speed_10(box: object) -> None:
    outcomes = by_job(replay_trace(box, "two-teams.yaml", SWEEP))
    waits = {name: round(outcomes[name].wait) for name in ANALYTIC_WAITS}
    print(f"speed {SWEEP}: waits {waits}")  # the sweep's figures, for docs/whatif.md
    for name, expected in ANALYTIC_WAITS.items():
        assert expected - EARLY <= waits[name] <= expected + LATE, (name, waits)
    for outcome in outcomes.values():
        start, end = outcome.admissions[0]
        assert RUN - EARLY <= end - start <= RUN + LATE, outcome
