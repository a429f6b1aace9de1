"""The NodeHealthPolicy's per-node hysteresis and blast-radius cap, driven by an explicit
clock: HealthState alone, then HealthController's metrics, logs and dry run. Nodes are
plain NodeTaints values here; tests/gate/test_health_controlplane.py does the same against
the real apiserver and a real Prometheus."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest
from trainyard_gate.health.controller import HealthController
from trainyard_gate.health.metrics import HealthMetrics
from trainyard_gate.health.policy import NodeHealthPolicy, parse
from trainyard_gate.health.state import QUARANTINE, RELEASE, REWRITE, HealthState, Outcome, rfc3339
from trainyard_gate.runtime.nodes import NodeTaints, Want
from trainyard_gate.runtime.prometheus import QueryFailed, node_names

from ..health_example import EXAMPLE

TEMP, XID = "gpu-temperature", "xid"
TRAIN, INFER = "train-h100-a", "infer-l40s"
KEY = "trainyard.dev/gpu-health"
REASON, SINCE = "trainyard.dev/gpu-health-reason", "trainyard.dev/gpu-health-since"
WALL0 = 1_800_000_000.0  # unix time at monotonic 0
OTHER_TAINT = {"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}


def policy(max_nodes: int = 4, percent: float = 100, release: int = 1800) -> NodeHealthPolicy:
    text = (
        EXAMPLE.replace("maxNodes: 4", f"maxNodes: {max_nodes}")
        .replace("maxPercentOfPool: 10", f"maxPercentOfPool: {percent}")
        .replace("releaseAfterSeconds: 1800", f"releaseAfterSeconds: {release}")
    )
    return parse(text, "policy.yaml")


class Cluster:
    """Pool nodes as the API would list them; apply() does what the merge patch does."""

    def __init__(self, pools: dict[str, int]) -> None:
        self.nodes: dict[str, NodeTaints] = {}
        self.pool_of: dict[str, str] = {}
        for pool, count in pools.items():
            for index in range(count):
                self.add(f"{pool}-{index:02d}", pool)
        self.patches = 0

    def add(
        self,
        name: str,
        pool: str,
        taints: Iterable[Mapping[str, Any]] = (OTHER_TAINT,),
        annotations: dict[str, str] | None = None,
    ) -> None:
        self.nodes[name] = NodeTaints(
            name, "1", tuple(taints), {"trainyard.dev/pool": pool}, annotations or {}
        )
        self.pool_of[name] = pool

    def list(self, label_selector: str) -> list[NodeTaints]:
        key, value = label_selector.split("=")
        return [node for name, node in sorted(self.nodes.items()) if node.labels.get(key) == value]

    def listing(self) -> dict[str, Sequence[NodeTaints]]:
        return {pool: self.list(f"trainyard.dev/pool={pool}") for pool in (TRAIN, INFER)}

    def apply(self, node: NodeTaints, want: Want) -> bool:
        current = self.nodes[node.name]
        if want.converged(current):
            return False
        body = want.body(current)
        notes = {**current.annotations, **body["metadata"].get("annotations", {})}
        self.nodes[node.name] = dataclasses.replace(
            current,
            resource_version=str(int(current.resource_version) + 1),
            taints=tuple(body["spec"]["taints"]),
            annotations={k: v for k, v in notes.items() if v is not None},
        )
        self.patches += 1
        return True

    def health(self, name: str) -> tuple[str | None, str | None, str | None]:
        """(taint value, reason annotation, since annotation) as on the node."""
        node = self.nodes[name]
        values = [t.get("value", "") for t in node.taints if t["key"] == KEY and t["effect"] == "NoSchedule"]
        assert len(values) <= 1 and OTHER_TAINT in node.taints
        return (values[0] if values else None, node.annotations.get(REASON), node.annotations.get(SINCE))

    def quarantined(self) -> Sequence[str]:  # a list: compared with lists
        return [name for name in sorted(self.nodes) if self.health(name)[0] is not None]


class Driver:
    """HealthState fed by hand: the test owns the clock and each query's answer."""

    def __init__(self, health_policy: NodeHealthPolicy, cluster: Cluster) -> None:
        self.state = HealthState(health_policy)
        self.cluster = cluster
        self.now = 0.0

    def see(self, bad: dict[str, Iterable[str]] | None, at: float) -> Outcome:
        """One pass at monotonic `at`: `bad` maps reason -> nodes (None: a query failed)."""
        self.now = at
        answers = None if bad is None else {reason: frozenset(nodes) for reason, nodes in bad.items()}
        outcome = self.state.observe(at, WALL0 + at, self.cluster.listing(), answers)
        for change in outcome.changes:
            self.cluster.apply(change.node, change.want)
        return outcome

    def hold(
        self, bad: dict[str, Iterable[str]] | None, start: float, end: float, every: float = 30
    ) -> Outcome:
        """The same answer every `every` seconds from `start` to `end` inclusive."""
        at, outcome = start, self.see(bad, start)
        while at + every <= end:
            at += every
            outcome = self.see(bad, at)
        return outcome


NODE = f"{TRAIN}-00"


@pytest.fixture
def driver() -> Driver:
    return Driver(policy(), Cluster({TRAIN: 4, INFER: 2}))


def actions(outcome: Outcome) -> list[tuple[str, str]]:
    return [(change.node.name, change.action) for change in outcome.changes]


def test_quarantine_exactly_at_quarantine_after_seconds(driver: Driver) -> None:
    assert driver.hold({TEMP: [NODE]}, 0, 270).changes == ()  # 270 s < 300 s
    assert driver.cluster.quarantined() == []
    outcome = driver.see({TEMP: [NODE]}, 300)  # 300 s held: at the limit is enough
    assert actions(outcome) == [(NODE, QUARANTINE)]
    assert driver.cluster.health(NODE) == (TEMP, TEMP, rfc3339(WALL0 + 300))
    assert driver.cluster.quarantined() == [NODE]  # that node only
    assert driver.see({TEMP: [NODE]}, 330).changes == ()  # converged: no more patches


def test_one_good_query_restarts_the_timer(driver: Driver) -> None:
    driver.hold({TEMP: [NODE]}, 0, 270)
    driver.see({TEMP: []}, 300)  # one good query
    assert driver.hold({TEMP: [NODE]}, 330, 600).changes == ()  # 270 s of the new run
    assert actions(driver.see({TEMP: [NODE]}, 630)) == [(NODE, QUARANTINE)]


def test_zero_seconds_quarantines_on_first_sight(driver: Driver) -> None:
    assert actions(driver.see({TEMP: [], XID: [NODE]}, 0)) == [(NODE, QUARANTINE)]
    assert driver.cluster.health(NODE)[:2] == (XID, XID)


def test_reasons_in_spec_order_first_one_is_the_taint_value(driver: Driver) -> None:
    driver.hold({TEMP: [NODE]}, 0, 270)
    driver.see({TEMP: [NODE], XID: [NODE]}, 300)  # both due now: temperature first in spec
    assert driver.cluster.health(NODE) == (TEMP, f"{TEMP},{XID}", rfc3339(WALL0 + 300))


def test_release_after_exactly_release_after_seconds(driver: Driver) -> None:
    driver.see({XID: [NODE]}, 0)
    assert driver.hold({XID: []}, 30, 1800).changes == ()  # good since 30: 1770 s
    outcome = driver.see({XID: []}, 1830)  # 1800 s of good queries
    assert actions(outcome) == [(NODE, RELEASE)]
    assert driver.cluster.health(NODE) == (None, None, None)  # taint and annotations gone
    assert [(name, round(held)) for name, _, held in outcome.released] == [(NODE, 1800)]


def test_bad_for_any_reason_restarts_the_release_timer(driver: Driver) -> None:
    driver.see({XID: [NODE]}, 0)
    driver.hold({}, 30, 1770)
    driver.see({TEMP: [NODE]}, 1800)  # another reason, not yet due for quarantine itself
    assert driver.hold({}, 1830, 3600).changes == ()  # 1770 s since the bad query
    assert actions(driver.see({}, 3630)) == [(NODE, RELEASE)]


def test_a_failed_query_is_hold_and_restarts_every_timer(driver: Driver) -> None:
    other = f"{TRAIN}-01"
    driver.see({XID: [other]}, 0)  # quarantined: release timer runs from 30
    driver.hold({TEMP: [NODE]}, 30, 270)
    assert driver.see(None, 300).changes == ()  # a failed query: nothing changes
    assert driver.hold({TEMP: [NODE]}, 330, 600).changes == ()  # 270 s: the run restarted
    assert actions(driver.see({TEMP: [NODE]}, 630)) == [(NODE, QUARANTINE)]
    driver.hold({TEMP: [NODE]}, 660, 1830)  # `other` good since 660 after the failure
    assert other in driver.cluster.quarantined()
    assert actions(driver.see({TEMP: [NODE]}, 2460)) == [(other, RELEASE)]


def test_a_failed_pass_does_not_even_rewrite_drift(driver: Driver) -> None:
    driver.see({XID: [NODE]}, 0)
    node = driver.cluster.nodes[NODE]
    driver.cluster.nodes[NODE] = dataclasses.replace(node, annotations={})  # someone removed them
    assert driver.see(None, 30).changes == ()
    assert actions(driver.see({XID: [NODE]}, 60)) == [(NODE, REWRITE)]
    assert driver.cluster.health(NODE) == (XID, XID, rfc3339(WALL0))  # the original time


def test_restart_reads_state_from_nodes_and_does_not_release_early() -> None:
    cluster = Cluster({TRAIN: 4})
    first = Driver(policy(), cluster)
    first.see({XID: [NODE]}, 0)
    first.hold({}, 30, 1770)  # 1740 s good, then the controller restarts
    again = Driver(policy(), cluster)
    assert again.hold({}, 2000, 3770).changes == ()  # a fresh 1800 s from the first good query
    assert again.state.quarantined[NODE].since == WALL0  # from the annotation
    assert actions(again.see({}, 3800)) == [(NODE, RELEASE)]


def test_a_tainted_node_without_annotations_is_read_as_quarantined_and_annotated() -> None:
    cluster = Cluster({TRAIN: 2})
    name = f"{TRAIN}-05"
    cluster.add(name, TRAIN, (OTHER_TAINT, {"key": KEY, "value": "ib-link", "effect": "NoSchedule"}))
    driver = Driver(policy(), cluster)
    assert actions(driver.see({}, 10)) == [(name, REWRITE)]
    assert cluster.health(name) == ("ib-link", "ib-link", rfc3339(WALL0 + 10))
    # A taint with another effect is not the controller's: left alone, not quarantined.
    other = f"{TRAIN}-06"
    cluster.add(other, TRAIN, (OTHER_TAINT, {"key": KEY, "value": "x", "effect": "PreferNoSchedule"}))
    assert driver.see({}, 20).changes == () and other not in driver.state.quarantined


def test_fleet_cap_oldest_bad_first_and_held_back() -> None:
    driver = Driver(policy(max_nodes=2), Cluster({TRAIN: 4, INFER: 2}))
    everyone = sorted(driver.cluster.nodes)
    oldest = [f"{INFER}-01", f"{TRAIN}-03"]  # last by name, first by age
    driver.hold({TEMP: oldest}, 0, 30)
    outcome = driver.hold({TEMP: everyone}, 60, 300)  # fleet-wide spike from 60
    assert driver.cluster.quarantined() == oldest
    assert dict(outcome.held_back) == {TRAIN: 0, INFER: 0}  # the others are not due yet
    assert dict(driver.see({TEMP: everyone}, 360).held_back) == {TRAIN: 3, INFER: 1}
    assert driver.cluster.quarantined() == oldest  # the cap holds
    assert dict(driver.see({TEMP: []}, 390).held_back) == {TRAIN: 0, INFER: 0}


def test_ties_in_age_go_by_node_name() -> None:
    driver = Driver(policy(max_nodes=2), Cluster({TRAIN: 4, INFER: 2}))
    outcome = driver.see({XID: sorted(driver.cluster.nodes, reverse=True)}, 0)
    assert driver.cluster.quarantined() == [f"{INFER}-00", f"{INFER}-01"]
    assert dict(outcome.held_back) == {TRAIN: 4, INFER: 0}


def test_first_decision_already_counts_held_back() -> None:
    driver = Driver(policy(max_nodes=1), Cluster({TRAIN: 3}))
    outcome = driver.see({XID: [f"{TRAIN}-02", f"{TRAIN}-00"]}, 0)
    assert [(c.node, c.admitted) for c in outcome.candidates] == [
        (f"{TRAIN}-00", True),
        (f"{TRAIN}-02", False),
    ]
    assert dict(outcome.held_back) == {TRAIN: 1, INFER: 0}


def test_pool_cap_is_a_floored_percentage_per_pool() -> None:
    # 10 % of 30 nodes is 3; 10 % of 9 is 0.9, but a pool may always lose one node.
    cluster = Cluster({TRAIN: 30, INFER: 9})
    driver = Driver(policy(max_nodes=10, percent=10), cluster)
    outcome = driver.see({XID: sorted(cluster.nodes)}, 0)
    assert dict(outcome.pool_caps) == {TRAIN: 3, INFER: 1}
    assert cluster.quarantined() == [f"{INFER}-00", f"{TRAIN}-00", f"{TRAIN}-01", f"{TRAIN}-02"]
    assert dict(outcome.held_back) == {TRAIN: 27, INFER: 8}


def test_releases_are_never_capped_and_free_room_first() -> None:
    cluster = Cluster({TRAIN: 4})
    for index in (0, 1, 2):  # three quarantined already; the new policy allows one
        name = f"{TRAIN}-{index:02d}"
        cluster.add(
            name,
            TRAIN,
            (OTHER_TAINT, {"key": KEY, "value": XID, "effect": "NoSchedule"}),
            {REASON: XID, SINCE: rfc3339(WALL0)},
        )
    driver = Driver(policy(max_nodes=1, release=60), cluster)
    driver.see({XID: [f"{TRAIN}-00"]}, 0)
    outcome = driver.see({XID: [f"{TRAIN}-00"]}, 60)  # two releases although over the cap
    assert sorted(n for n, a in actions(outcome) if a == RELEASE) == [f"{TRAIN}-01", f"{TRAIN}-02"]
    driver.see({XID: [f"{TRAIN}-03"]}, 90)  # fleet 1 of 1: -03 held back
    assert cluster.quarantined() == [f"{TRAIN}-00"]
    driver.hold({XID: [f"{TRAIN}-03"]}, 120, 150)  # -00 good since 90 ... released at 150
    assert cluster.quarantined() == [f"{TRAIN}-03"]  # released first, then -03 got its room


def test_nodes_outside_pools_and_unknown_series_are_ignored() -> None:
    cluster = Cluster({TRAIN: 2})
    cluster.nodes["cpu-0"] = NodeTaints("cpu-0", "1", (OTHER_TAINT,), {"role": "cpu"})
    driver = Driver(policy(), cluster)
    outcome = driver.see({XID: ["cpu-0", "no-such-node"]}, 0)
    assert outcome.changes == () and outcome.bad == {TEMP: 0, XID: 0}


def test_a_deleted_node_is_forgotten_and_read_afresh() -> None:
    cluster = Cluster({TRAIN: 2})
    driver = Driver(policy(), cluster)
    driver.see({XID: [NODE]}, 0)
    del cluster.nodes[NODE]
    driver.see({XID: [NODE]}, 30)
    assert NODE not in driver.state.quarantined
    cluster.add(NODE, TRAIN)  # recreated clean, still bad: quarantined again on first sight
    assert actions(driver.see({XID: [NODE]}, 60)) == [(NODE, QUARANTINE)]


class Answers:
    """The condition queries' answers the controller gets, by PromQL text."""

    def __init__(self, health_policy: NodeHealthPolicy) -> None:
        self.by_reason: dict[str, frozenset[str]] = {}
        self.failing: set[str] = set()
        self.queries = {c.query: c.reason for c in health_policy.conditions}

    def __call__(self, query: str) -> frozenset[str]:
        reason = self.queries[query]
        if reason in self.failing:
            raise QueryFailed("cannot reach http://127.0.0.1:9/api/v1/query: ConnectionError")
        return self.by_reason.get(reason, frozenset())


def controller(
    dry_run: bool = False, max_nodes: int = 1
) -> tuple[HealthController, Cluster, Answers, list[float]]:
    health_policy = policy(max_nodes=max_nodes)
    cluster, answers, clock = Cluster({TRAIN: 3, INFER: 1}), Answers(health_policy), [0.0]
    metrics = HealthMetrics([p.name for p in health_policy.pools], health_policy.reasons)
    made = HealthController(
        health_policy,
        answers,
        cluster,
        metrics,
        dry_run,
        clock=lambda: clock[0],
        wall_clock=lambda: WALL0 + clock[0],
    )
    return made, cluster, answers, clock


def value(made: HealthController, name: str, **labels: str) -> float | None:
    return made._metrics.registry.get_sample_value(name, labels)


def test_controller_metrics_say_what_the_cap_did(caplog: pytest.LogCaptureFixture) -> None:
    made, cluster, answers, clock = controller(max_nodes=1)
    caplog.set_level(logging.INFO, logger="trainyard_gate")
    answers.by_reason[XID] = frozenset({f"{TRAIN}-01", f"{TRAIN}-02"})
    assert made.reconcile()
    assert cluster.quarantined() == [f"{TRAIN}-01"]
    node = {"node": f"{TRAIN}-01", "pool": TRAIN, "reason": XID}
    assert value(made, "trainyard_health_quarantined", **node) == 1
    assert value(made, "trainyard_health_quarantined_since_seconds", **node) == WALL0
    assert value(made, "trainyard_health_held_back", pool=TRAIN) == 1
    assert value(made, "trainyard_health_held_back", pool=INFER) == 0
    assert value(made, "trainyard_health_cap", pool=TRAIN) == 3  # 100 % of 3
    assert value(made, "trainyard_health_cap_fleet") == 1
    assert value(made, "trainyard_health_pool_nodes", pool=TRAIN) == 3
    assert value(made, "trainyard_health_bad_nodes", reason=XID) == 2
    assert value(made, "trainyard_health_bad_nodes", reason=TEMP) == 0
    assert value(made, "trainyard_health_query_success") == 1
    assert value(made, "trainyard_health_last_success_timestamp_seconds") == WALL0
    assert value(made, "trainyard_health_node_patches_total", action="quarantine") == 1
    messages = [(r.getMessage(), r.levelno) for r in caplog.records]
    assert ("node quarantined", logging.INFO) in messages
    assert ("quarantine held back by the cap", logging.WARNING) in messages

    clock[0] = 30
    answers.failing.add(TEMP)  # one query fails: hold, the gauges keep the last decision
    assert not made.reconcile()
    assert value(made, "trainyard_health_query_success") == 0
    assert value(made, "trainyard_health_errors_total", stage="query") == 1
    assert value(made, "trainyard_health_held_back", pool=TRAIN) == 1
    assert value(made, "trainyard_health_last_success_timestamp_seconds") == WALL0

    clock[0], answers.failing, answers.by_reason = 60, set(), {}
    for _ in range(2):
        made.reconcile()
        clock[0] += 1800
    assert cluster.quarantined() == []
    assert value(made, "trainyard_health_quarantined", **node) is None  # series gone on release
    assert value(made, "trainyard_health_node_patches_total", action="release") == 1


def test_dry_run_decides_and_counts_but_never_patches() -> None:
    made, cluster, answers, clock = controller(dry_run=True)
    answers.by_reason[XID] = frozenset({f"{TRAIN}-00"})
    for _ in range(3):
        assert made.reconcile()
        clock[0] += 30
    assert cluster.patches == 0 and cluster.quarantined() == []
    assert value(made, "trainyard_health_node_patches_total", action="quarantine") == 1  # reported once
    node = {"node": f"{TRAIN}-00", "pool": TRAIN, "reason": XID}
    assert value(made, "trainyard_health_quarantined", **node) == 1  # what it would hold


def test_an_api_failure_is_counted_and_the_next_pass_finishes() -> None:
    made, cluster, answers, clock = controller()
    answers.by_reason[XID] = frozenset({f"{TRAIN}-00"})
    real_apply = cluster.apply

    def refuse(node: NodeTaints, want: Want) -> bool:
        raise RuntimeError("apiserver down")

    cluster.apply = refuse  # type: ignore[method-assign]
    assert not made.reconcile()
    assert value(made, "trainyard_health_errors_total", stage="nodes") == 1
    cluster.apply = real_apply  # type: ignore[method-assign]
    clock[0] = 30
    assert made.reconcile() and cluster.quarantined() == [f"{TRAIN}-00"]
    assert value(made, "trainyard_health_node_patches_total", action="quarantine") == 1


def test_bad_nodes_follow_each_successful_query_even_in_a_failed_pass() -> None:
    made, cluster, answers, _ = controller()
    answers.by_reason = {TEMP: frozenset({f"{TRAIN}-00", "not-a-pool-node"}), XID: frozenset({f"{TRAIN}-01"})}
    answers.failing.add(XID)
    assert not made.reconcile()
    assert value(made, "trainyard_health_bad_nodes", reason=TEMP) == 1  # pool nodes only
    assert value(made, "trainyard_health_bad_nodes", reason=XID) == 0  # never succeeded
    assert cluster.patches == 0


def test_a_node_moved_to_another_pool_counts_against_that_pool() -> None:
    cluster = Cluster({TRAIN: 3, INFER: 2})
    driver = Driver(policy(percent=50), cluster)  # after the move 2 and 3 nodes: caps 1 and 1
    driver.see({XID: [NODE]}, 0)
    cluster.add(NODE, INFER, cluster.nodes[NODE].taints, dict(cluster.nodes[NODE].annotations))
    outcome = driver.see({XID: [NODE, f"{INFER}-00", f"{TRAIN}-01"]}, 30)
    assert driver.state.quarantined[NODE].pool == INFER
    assert sorted(cluster.quarantined()) == [NODE, f"{TRAIN}-01"]  # INFER full, TRAIN has room
    assert dict(outcome.held_back) == {TRAIN: 0, INFER: 1}


@pytest.mark.parametrize(
    "payload, expected",
    [
        ({"status": "success", "data": {"resultType": "vector", "result": []}}, frozenset()),
        (
            {
                "status": "success",
                "data": {
                    "resultType": "vector",
                    "result": [
                        {"metric": {"node": "a", "gpu": "0"}, "value": [1, "80"]},
                        {"metric": {"node": "a", "gpu": "1"}, "value": [1, "81"]},
                        {"metric": {"node": "b"}, "value": [1, "NaN"]},
                    ],
                },
            },
            frozenset({"a", "b"}),
        ),
    ],
)
def test_node_names_are_the_node_labels_of_every_series(payload: object, expected: frozenset[str]) -> None:
    assert node_names(payload) == expected


@pytest.mark.parametrize(
    "payload, message",
    [
        (
            {
                "status": "success",
                "data": {"resultType": "vector", "result": [{"metric": {"instance": "x"}}]},
            },
            "has no label node",
        ),
        (
            {"status": "success", "data": {"resultType": "scalar", "result": [1, "1"]}},
            "expected an instant vector",
        ),
        ({"status": "error", "error": "parse error"}, "query failed: parse error"),
    ],
)
def test_a_result_that_cannot_name_nodes_is_a_failed_query(payload: object, message: str) -> None:
    with pytest.raises(QueryFailed, match=message):
        node_names(payload)
