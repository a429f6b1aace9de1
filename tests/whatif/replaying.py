"""The two-teams replay shared by tests/whatif/test_fidelity.py (speed 10) and
test_speeds.py (the sweep's speed 20): a module's box of staging, a trace of this folder
replayed on it, and the waits worked out by hand in test_fidelity.py's docstring with the
tolerance stated there (+10 / -1 s of wall time, in trace time x the speed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from generators.model.load import load as load_env
from tests.support import ROOT
from tests.support.box import module_box
from whatif.replay import Replayed, replay
from whatif.report import Outcome
from whatif.run import parts_of
from whatif.trace import load

ENV = "staging"
SPEED = 10
HERE = Path(__file__).parent
LATE = 10 * SPEED  # trace seconds a wait may come out late
EARLY = 1 * SPEED  # and early
RUN = 100  # two-teams.yaml: every job's duration, trace seconds
ANALYTIC_WAITS = {"r1": 0, "e1": 0, "r2": 90, "e2": 40}  # test_fidelity.py's docstring


def box_at(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, speed: int
) -> Iterator[object]:
    """A module's own box of staging at `speed` (tests/support/box.py), as the `Box` that `up` returns."""
    from box.up import Box, rendered
    from generators.pipeline.render import objects

    with module_box(request, tmp_path_factory, ENV, speed=speed) as up:
        env, files = rendered(ROOT, ENV, up.state.scale, up.folder, up.state.speed)  # `up`'s sped-up copy
        yield Box(env, up.state, up.folder, objects(files))


def replay_trace(box: object, name: str, speed: int = SPEED) -> Replayed:
    from box.up import Box

    assert isinstance(box, Box)
    trace = load(HERE / name, f"tests/whatif/{name}", load_env(ROOT, ENV))
    kube = box.client()
    try:
        return replay(kube, box.client, trace, "nvidia.com/gpu", speed, lambda _: None, parts_of(box))
    finally:
        kube.close()


def by_job(replayed: Replayed) -> dict[str, Outcome]:
    assert replayed.complete, "every job should finish well inside the replay's budget"
    return {o.job: o for o in replayed.outcomes}
