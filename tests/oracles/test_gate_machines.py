"""The overflow gate's hysteresis and the health controller's timers and cap, fed scenarios
whose every expected state was worked out by hand from the thresholds written here.

Gate band (one gate): close when free >= 40 held 300 s, open when free < 12 held 30 s.
Health policy: the contract example (tests/gate/health_example.py: gpu-temperature after
300 s, xid at once, release after 1800 s good) with the cap each test states.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainyard_gate.health.policy import NodeHealthPolicy, parse
from trainyard_gate.health.state import HealthState
from trainyard_gate.overflow.hysteresis import GateMemory, GateState, OnUnavailable, Thresholds, step
from trainyard_gate.runtime.nodes import NodeTaints

from tests.gate.health_example import EXAMPLE

BAND = Thresholds(
    close_when_free_gpus_at_least=40,
    close_after_seconds=300,
    open_when_free_gpus_below=12,
    open_after_seconds=30,
)
OPEN, CLOSED = GateState.OPEN, GateState.CLOSED


def states(
    start: GateState,
    readings: Sequence[tuple[float, float | None]],
    on_unavailable: OnUnavailable = OnUnavailable.HOLD,
) -> list[GateState]:
    memory = GateMemory(start)
    out = []
    for now, free in readings:
        memory, decision = step(memory, now, free, BAND, on_unavailable)
        out.append(decision.state)
    return out


def test_opens_after_the_open_hold_and_closes_after_a_fresh_close_hold() -> None:
    # t=0 and t=30: 5 free (< 12) for 30 s -> open at 30. From t=60, 50 free (>= 40): the
    # close timer starts at 60, not at the run that opened the gate: closed at 360, not 330.
    readings = [(0, 5), (30, 5), (60, 50), (330, 50), (359, 50), (360, 50)]
    assert states(CLOSED, readings) == [CLOSED, OPEN, OPEN, OPEN, OPEN, CLOSED]


def test_thresholds_are_at_least_and_below() -> None:
    # exactly 40 free counts toward closing; exactly 12 never opens (12 is not below 12)
    assert states(OPEN, [(0, 40), (300, 40)]) == [OPEN, CLOSED]
    assert states(CLOSED, [(0, 12), (30, 12), (1000, 12)]) == [CLOSED, CLOSED, CLOSED]
    assert states(CLOSED, [(0, 11), (30, 11)]) == [CLOSED, OPEN]


def test_a_reading_in_the_band_restarts_the_timer() -> None:
    # open: 5 at 0, 20 (in the band) at 20, 5 at 25 and 54 (29 s: not yet), 55 (30 s): open
    assert states(CLOSED, [(0, 5), (20, 20), (25, 5), (54, 5), (55, 5)]) == [CLOSED] * 4 + [OPEN]


def test_prometheus_unavailable() -> None:
    # close: no value counts toward closing, after closeAfterSeconds
    assert states(OPEN, [(0, None), (299, None), (300, None)], OnUnavailable.CLOSE) == [OPEN, OPEN, CLOSED]
    # hold: never changes, and it breaks a run: 5 free at 0, nothing at 20, 5 at 30 -> 0 s held
    assert states(CLOSED, [(0, 5), (20, None), (30, 5), (59, 5), (60, 5)]) == [CLOSED] * 4 + [OPEN]
    assert states(OPEN, [(0, None), (10_000, None)]) == [OPEN, OPEN]


def health_policy(max_nodes: int, percent: int) -> NodeHealthPolicy:
    text = EXAMPLE.replace("maxNodes: 4", f"maxNodes: {max_nodes}").replace(
        "maxPercentOfPool: 10", f"maxPercentOfPool: {percent}"
    )
    return parse(text, "policy.yaml")


POOL = "train-h100-a"


def listing(count: int) -> dict[str, list[NodeTaints]]:
    return {
        POOL: [NodeTaints(f"n{i:02d}", "1", (), {"trainyard.dev/pool": POOL}) for i in range(count)],
        "infer-l40s": [],
    }


def bad(temperature: Sequence[str] = (), xid: Sequence[str] = ()) -> dict[str, frozenset[str]]:
    return {"gpu-temperature": frozenset(temperature), "xid": frozenset(xid)}


def test_pool_cap_is_floored_percent_of_the_pool() -> None:
    # 15 nodes x 10 % = 1.5 -> 1 node; three xid nodes: one quarantined, two held back
    state = HealthState(health_policy(max_nodes=4, percent=10))
    outcome = state.observe(0, 1_800_000_000, listing(15), bad(xid=["n01", "n02", "n03"]))
    assert outcome.pool_caps[POOL] == 1
    assert sorted(state.quarantined) == ["n01"]
    assert outcome.held_back[POOL] == 2


def test_fleet_cap_is_max_nodes() -> None:
    state = HealthState(health_policy(max_nodes=2, percent=100))
    state.observe(0, 1_800_000_000, listing(10), bad(xid=["n01", "n02", "n03"]))
    assert sorted(state.quarantined) == ["n01", "n02"]


def test_the_cap_takes_the_oldest_bad_node_first() -> None:
    # n05 hot from t=0, n01 hot from t=100; at t=400 both are due (300 s): n05 is older
    state = HealthState(health_policy(max_nodes=1, percent=100))
    nodes = listing(6)
    state.observe(0, 1_800_000_000, nodes, bad(temperature=["n05"]))
    state.observe(100, 1_800_000_100, nodes, bad(temperature=["n05", "n01"]))
    state.observe(299, 1_800_000_299, nodes, bad(temperature=["n05", "n01"]))
    assert state.quarantined == {}
    state.observe(400, 1_800_000_400, nodes, bad(temperature=["n05", "n01"]))
    assert sorted(state.quarantined) == ["n05"]


def test_release_needs_release_after_seconds_of_good_readings() -> None:
    state = HealthState(health_policy(max_nodes=4, percent=100))
    nodes = listing(3)
    state.observe(0, 1_800_000_000, nodes, bad(xid=["n00"]))
    assert sorted(state.quarantined) == ["n00"]
    for now in (600, 1200, 1800, 2400):  # still bad: never released (nor released and re-taken)
        outcome = state.observe(now, 1_800_000_000 + now, nodes, bad(xid=["n00"]))
        assert outcome.released == (), now  # (changes repeat: this listing never gets the taint)
    assert sorted(state.quarantined) == ["n00"] and state.quarantined["n00"].since == 1_800_000_000
    state.observe(3000, 1_800_003_000, nodes, bad())  # good from 3000
    state.observe(4799, 1_800_004_799, nodes, bad())  # 1799 s good
    assert sorted(state.quarantined) == ["n00"]
    outcome = state.observe(4800, 1_800_004_800, nodes, bad())  # 1800 s good: released
    assert state.quarantined == {} and [name for name, _, _ in outcome.released] == ["n00"]


def test_a_failed_query_restarts_every_timer() -> None:
    # hot at 0 and 200, the query fails at 250, hot again from 300: due at 600, not at 300
    state = HealthState(health_policy(max_nodes=4, percent=100))
    nodes = listing(2)
    for now, reading in (
        (0, bad(temperature=["n01"])),
        (200, bad(temperature=["n01"])),
        (250, None),
        (300, bad(temperature=["n01"])),
        (599, bad(temperature=["n01"])),
    ):
        outcome = state.observe(now, 1_800_000_000 + now, nodes, reading)
    assert state.quarantined == {} and outcome.queried
    state.observe(600, 1_800_000_600, nodes, bad(temperature=["n01"]))
    assert sorted(state.quarantined) == ["n01"]
