"""The fault scenes' invariants (box/invariants.py) fail on a violating snapshot and hold on
its safe neighbour: none of them can pass vacuously. Hand-built snapshots, no server; the
limits come from literals here and, in the last test, from staging's spec."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from box import invariants
from box.invariants import (
    ADMISSION,
    GATE,
    PDB,
    POD_CAUSE,
    QUARANTINE_CAP,
    QUOTA,
    GateLimits,
    GateReading,
    InferenceLimits,
    Invariants,
    Limits,
    Snapshot,
)
from generators.model.load import load

ROOT = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]

POOL = {"trainyard.dev/pool": "infer-l40s"}
GATE_LIMITS = GateLimits("vk-mock", "trainyard.dev/overflow-gate", 4, 16, 2.0, 10.0, 1.0)
SERVICE = InferenceLimits("serving", "chat-api", {"app": "chat-api"})
LIMITS = Limits(
    pools={"infer-l40s": POOL, "train-h100": {"trainyard.dev/pool": "train-h100"}},
    pool_caps={"infer-l40s": 1, "train-h100": 2},
    max_quarantined=2,
    quarantine_keys=("trainyard.dev/gpu-health",),
    gates=(GATE_LIMITS,),
    inference=(SERVICE,),
    sample_seconds=1.0,
    cause_grace_seconds=5.0,
)


def queue(name: str, nominal: str, borrowing: str | None, used: str, flavor: str = "infer-l40s") -> Obj:
    resource: Obj = {"name": "nvidia.com/gpu", "nominalQuota": nominal}
    if borrowing is not None:
        resource["borrowingLimit"] = borrowing
    return {
        "metadata": {"name": name},
        "spec": {"resourceGroups": [{"flavors": [{"name": flavor, "resources": [resource]}]}]},
        "status": {
            "flavorsReservation": [
                {"name": flavor, "resources": [{"name": "nvidia.com/gpu", "total": used, "borrowed": "0"}]}
            ]
        },
    }


def node(name: str, pool: str, taints: list[Obj] | None = None, gpus: int = 8) -> Obj:
    return {
        "metadata": {"name": name, "labels": {"trainyard.dev/pool": pool}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"nvidia.com/gpu": str(gpus)}},
    }


QUARANTINE = {"key": "trainyard.dev/gpu-health", "value": "xid", "effect": "NoSchedule"}
GATE_TAINT = {"key": "trainyard.dev/overflow-gate", "value": "closed", "effect": "NoSchedule"}


def vk(open_: bool) -> Obj:
    return {"metadata": {"name": "vk-mock", "labels": {}}, "spec": {"taints": [] if open_ else [GATE_TAINT]}}


def kinds(found: list[invariants.Violation]) -> list[str]:
    return [v.invariant for v in found]


def test_quota_over_nominal_plus_borrowing_limit_fails() -> None:
    safe = Snapshot(0, 0, cluster_queues=[queue("a", "32", "16", "48"), queue("b", "32", None, "0")])
    assert invariants.check_quota(safe) == []
    over = Snapshot(1, 0, cluster_queues=[queue("a", "32", "16", "56"), queue("b", "32", None, "0")])
    [found] = invariants.check_quota(over)
    assert found.invariant == QUOTA and "ClusterQueue a uses 56" in found.text


def test_quota_over_what_exists_in_the_cohort_fails() -> None:
    """No borrowing limit: bounded by the quota that exists over every queue (and Cohort)."""
    over = Snapshot(0, 0, cluster_queues=[queue("a", "32", None, "40"), queue("b", "0", None, "32")])
    [found] = invariants.check_quota(over)
    assert "use 72 nvidia.com/gpu of flavor infer-l40s together, above the 32" in found.text
    cohort = {"spec": {"resourceGroups": [{"flavors": [{"name": "infer-l40s", "resources": [
        {"name": "nvidia.com/gpu", "nominalQuota": "40"}]}]}]}}  # fmt: skip
    with_cohort = Snapshot(0, 0, cluster_queues=over.cluster_queues, cohorts=[cohort])
    assert invariants.check_quota(with_cohort) == []


def test_quarantine_above_the_pool_cap_and_max_nodes_fails() -> None:
    safe = Snapshot(
        0, 0, nodes=[node("l-0", "infer-l40s", [QUARANTINE]), node("h-0", "train-h100", [QUARANTINE])]
    )
    assert invariants.check_quarantine_caps(LIMITS, safe) == []
    pool_over = Snapshot(
        1, 0, nodes=[node("l-0", "infer-l40s", [QUARANTINE]), node("l-1", "infer-l40s", [QUARANTINE])]
    )
    [found] = invariants.check_quarantine_caps(LIMITS, pool_over)
    assert (
        found.invariant == QUARANTINE_CAP and "2 nodes of pool infer-l40s quarantined (16 GPUs" in found.text
    )
    fleet_over = Snapshot(
        2,
        0,
        nodes=[
            node("l-0", "infer-l40s", [QUARANTINE]),
            node("h-0", "train-h100", [QUARANTINE]),
            node("h-1", "train-h100", [QUARANTINE]),
        ],
    )
    [found] = invariants.check_quarantine_caps(LIMITS, fleet_over)
    assert "3 nodes quarantined (24 GPUs), above cap.maxNodes 2" in found.text


def gate_run(samples: Sequence[tuple[float, float | None, float, bool]]) -> list[invariants.Violation]:
    """(at, free GPUs the gate reports, desired_closed, node open) -> every violation."""
    checks = Invariants(LIMITS)
    found = []
    for at, free, desired, open_ in samples:
        reading = GateReading(free, {"vk-mock": desired})
        found += invariants.check_gate(
            LIMITS, checks.memory, Snapshot(at, at, nodes=[vk(open_)], gate=reading)
        )
    return found


def test_gate_opening_after_its_hold_holds() -> None:
    assert (
        gate_run([(0, 48, 1, False), (1, 0, 1, False), (2, 0, 1, False), (3, 0, 0, True), (4, 8, 0, True)])
        == []
    )


def test_gate_open_without_a_reading_under_the_open_line_fails() -> None:
    [found] = gate_run([(0, 48, 1, False), (1, 48, 0, True)])
    assert found.invariant == GATE and "vk-mock open with no reading under it" in found.text


def test_gate_open_before_its_hold_passed_fails() -> None:
    [found] = gate_run([(0, 48, 1, False), (1, 0, 1, False), (1.5, 0, 0, True)])
    assert "a reading under it for 0.5s" in found.text


def test_gate_open_long_after_reading_the_close_line_fails() -> None:
    held = [(0, 0, 1, False), (3, 0, 0, True), (4, 20, 0, True), (10, 20, 0, True), (18, 20, 0, True)]
    [found] = gate_run(held)
    assert "still open 14.0s after the gate read 20 free GPUs" in found.text


def test_gate_blind_under_hold_restarts_the_close_hold() -> None:
    """onPrometheusUnavailable hold: blind passes reset the gate's timers, so staying open
    through an outage is no violation; the close hold counts again from the next reading."""
    checks = Invariants(LIMITS)
    found = []
    for at, success, open_ in [
        (0, 1, False),
        (3, 1, True),
        (4, 1, True),
        (5, 0, True),
        (30, 0, True),
        (31, 1, True),
    ]:
        free = 0 if at < 4 else 20
        reading = GateReading(free, {"vk-mock": 0}, success)
        snapshot = Snapshot(at, at, nodes=[vk(open_)], gate=reading)
        found += invariants.check_gate(LIMITS, checks.memory, snapshot)
    assert found == []
    late = Snapshot(45, 45, nodes=[vk(True)], gate=GateReading(20, {"vk-mock": 0}, 1))
    [violation] = invariants.check_gate(LIMITS, checks.memory, late)
    assert "still open 14.0s after" in violation.text


def test_gate_open_against_its_recorded_state_for_two_samples_fails() -> None:
    one = gate_run([(0, 0, 1, False), (3, 0, 0, True), (4, 0, 1, True), (5, 0, 1, False)])
    assert one == []  # one sample between the decision and the patch is allowed
    [found] = gate_run([(0, 0, 1, False), (3, 0, 0, True), (4, 0, 1, True), (5, 0, 1, True)])
    assert "open while the gate's recorded state is closed, since +4.0s" in found.text


def pod(name: str, ready: bool = True, phase: str = "Running", uid: str = "") -> Obj:
    return {
        "metadata": {"name": name, "namespace": "serving", "uid": uid or name, "labels": {"app": "chat-api"}},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def pdb(desired: int) -> Obj:
    return {"metadata": {"name": "chat-api", "namespace": "serving"}, "status": {"desiredHealthy": desired}}


def descheduled(name: str, wall: float) -> Obj:
    stamp = f"1970-01-01T00:00:{int(wall):02d}.000000Z"
    return {
        "action": "Descheduled",
        "reason": "RemovePodsViolatingNodeTaints",
        "type": "Normal",
        "eventTime": stamp,
        "regarding": {"kind": "Pod", "name": name, "namespace": "serving", "uid": name},
    }


def test_ready_under_the_pdb_after_our_eviction_fails_and_after_preemption_holds() -> None:
    checks = Invariants(LIMITS)
    at_floor = Snapshot(0, 10, pods=[pod("a"), pod("b"), pod("c")], pdbs=[pdb(3)])
    assert invariants.check_pdb(LIMITS, checks.memory, at_floor) == []
    preempted = Snapshot(1, 11, pods=[pod("a"), pod("b")], pdbs=[pdb(3)])
    assert invariants.check_pdb(LIMITS, checks.memory, preempted) == []  # nobody of ours evicted
    evicted = Snapshot(2, 12, pods=[pod("a"), pod("b")], pdbs=[pdb(3)], events=[descheduled("c", 11)])
    [found] = invariants.check_pdb(LIMITS, checks.memory, evicted)
    assert found.invariant == PDB and "2 Ready replicas of serving/chat-api, under the PDB's 3" in found.text


def test_a_pod_that_ended_without_a_cause_fails_after_the_grace() -> None:
    checks = Invariants(LIMITS)
    first = Snapshot(0, 0, pods=[pod("a"), pod("b"), pod("c"), pod("d")])
    assert invariants.check_pod_causes(LIMITS, checks.memory, first) == []
    preempted = {
        "reason": "Preempted",
        "regarding": {"kind": "Pod", "name": "a", "namespace": "serving", "uid": "a"},
    }
    deleted = {
        "reason": "SuccessfulDelete",
        "note": "Deleted pod: b",
        "regarding": {"kind": "Job", "namespace": "serving"},
    }
    later = Snapshot(1, 1, pods=[pod("d", phase="Succeeded")], events=[preempted, deleted])
    assert invariants.check_pod_causes(LIMITS, checks.memory, later) == []  # c: within the grace
    settled = Snapshot(7, 7, pods=[pod("d", phase="Succeeded")], events=[preempted, deleted])
    [found] = invariants.check_pod_causes(LIMITS, checks.memory, settled)
    assert found.invariant == POD_CAUSE and "pod serving/c ended" in found.text
    assert invariants.check_pod_causes(LIMITS, checks.memory, settled) == []  # reported once


def test_a_pod_of_a_job_kueue_stopped_has_its_cause() -> None:
    """Kueue's preemption stops the Job (event Stopped on the Job); the job controller then
    deletes every pod with no event per pod."""
    checks = Invariants(LIMITS)
    gang = pod("gang-0")
    gang["metadata"]["labels"]["batch.kubernetes.io/job-name"] = "gang"
    other = pod("other-0")
    other["metadata"]["labels"]["batch.kubernetes.io/job-name"] = "other"
    assert invariants.check_pod_causes(LIMITS, checks.memory, Snapshot(0, 0, pods=[gang, other])) == []
    stopped = {
        "reason": "Stopped",
        "note": "Preempted to accommodate a workload",
        "regarding": {"kind": "Job", "name": "gang", "namespace": "serving"},
    }
    [found] = invariants.check_pod_causes(LIMITS, checks.memory, Snapshot(9, 9, events=[stopped]), final=True)
    assert "pod serving/other-0 ended" in found.text


def test_a_pod_of_a_job_whose_workload_kueue_evicted_has_its_cause() -> None:
    """The Workload's Evicted condition is the durable record (the Job's event may be lost)."""
    checks = Invariants(LIMITS)
    gang = pod("gang-0")
    gang["metadata"]["labels"]["batch.kubernetes.io/job-name"] = "gang"
    invariants.check_pod_causes(LIMITS, checks.memory, Snapshot(0, 0, pods=[gang]))
    workload = {
        "metadata": {"namespace": "serving", "ownerReferences": [{"kind": "Job", "name": "gang"}]},
        "status": {"conditions": [{"type": "Evicted", "status": "True", "reason": "Preempted"}]},
    }
    assert (
        invariants.check_pod_causes(LIMITS, checks.memory, Snapshot(9, 9, workloads=[workload]), final=True)
        == []
    )
    admitted = {**workload, "status": {"conditions": [{"type": "Admitted", "status": "True"}]}}
    fresh = Invariants(LIMITS)
    invariants.check_pod_causes(LIMITS, fresh.memory, Snapshot(0, 0, pods=[gang]))
    [found] = invariants.check_pod_causes(
        LIMITS, fresh.memory, Snapshot(9, 9, workloads=[admitted]), final=True
    )
    assert "pod serving/gang-0 ended" in found.text


T1, T2, T3 = "2026-12-05T01:05:36Z", "2026-12-05T01:05:41Z", "2026-12-05T01:05:42Z"
TRAINING = queue("foundation", "32", "0", "0", flavor="train-h100")


def gang_pod(job: str, index: int, phase: str = "Running", terminating: bool = False) -> Obj:
    found = pod(f"{job}-{index}", phase=phase)
    found["metadata"]["labels"]["batch.kubernetes.io/job-name"] = job
    if terminating:
        found["metadata"]["deletionTimestamp"] = T2
    return found


def workload(job: str, since: str | None, gpus: str, evicted: bool = False) -> Obj:
    """A Job's Workload as Kueue writes it: QuotaReserved=True since `since` with its admission,
    or QuotaReserved=False with none (`since` None)."""
    conditions: list[Obj] = [
        {"type": "QuotaReserved", "status": "True" if since else "False", "lastTransitionTime": since or T3}
    ]
    if evicted:
        conditions.append(
            {"type": "Evicted", "status": "True", "reason": "Preempted", "lastTransitionTime": T1}
        )
    status: Obj = {"conditions": conditions}
    if since:
        status["admission"] = {
            "clusterQueue": "foundation",
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"nvidia.com/gpu": "train-h100"},
                    "resourceUsage": {"nvidia.com/gpu": gpus},
                }
            ],
        }
    meta = {"name": f"job-{job}", "namespace": "serving", "ownerReferences": [{"kind": "Job", "name": job}]}
    return {"metadata": meta, "status": status}


def admissions_of(history: list[tuple[list[Obj], list[Obj]]]) -> tuple[list[str], Invariants]:
    """Feed (workloads, pods) samples in order; the admission violations' texts."""
    checks = Invariants(LIMITS)
    found: list[str] = []
    for at, (workloads, pods) in enumerate(history):
        snapshot = Snapshot(at, at, cluster_queues=[TRAINING], workloads=workloads, pods=pods)
        found += [
            v.text for v in invariants.check_admissions(checks.memory, snapshot) if v.invariant == ADMISSION
        ]
    return found, checks


def test_a_preempted_gang_readmitted_after_its_eviction_completed_holds() -> None:
    """The kueue-restart history as a watch saw it: low preempted, its quota released once its
    Job had no active pod, admitted again by the restarted scheduler (a new QuotaReserved
    transition), preempted again, then high admitted. Kueue's status rewritten with the same
    reservation (another Admitted event, no new transition) is the same admission."""
    low = [gang_pod("low", 0), gang_pod("low", 1)]
    stopping = [gang_pod("low", 0, terminating=True)]
    high = [gang_pod("high", 0), gang_pod("high", 1)]
    found, checks = admissions_of(
        [
            ([workload("low", T1, "32"), workload("high", None, "16")], low),
            ([workload("low", T1, "32", evicted=True), workload("high", None, "16")], low),
            ([workload("low", T1, "32", evicted=True), workload("high", None, "16")], low),  # re-written
            ([workload("low", None, "32", evicted=True), workload("high", None, "16")], stopping),
            ([workload("low", T2, "32"), workload("high", None, "16")], stopping),
            ([workload("low", None, "32", evicted=True), workload("high", T3, "16")], high),
        ]
    )
    assert found == []
    assert checks.memory.reservations == {"serving/job-low": [T1, T2], "serving/job-high": [T3]}


def test_a_gang_reserved_again_while_its_previous_pods_run_fails() -> None:
    low = [gang_pod("low", 0), gang_pod("low", 1)]
    found, _ = admissions_of(
        [
            ([workload("low", T1, "32")], low),
            ([workload("low", T2, "32")], [gang_pod("low", 0), gang_pod("low", 2, phase="Pending")]),
        ]
    )
    assert found == [
        f"Workload serving/job-low reserved again (QuotaReserved since {T2}, after {T1}) while 1 pod(s) "
        "of its previous admission still run"
    ]


def test_two_gangs_holding_one_queue_quota_at_once_fails() -> None:
    """low's 32 GPUs and high's 16 in a queue of 32 nominal, 0 borrowing: quota counted twice."""
    found, _ = admissions_of(
        [
            ([workload("low", T1, "32", evicted=True), workload("high", None, "16")], []),
            ([workload("low", T1, "32", evicted=True), workload("high", T3, "16")], []),
        ]
    )
    assert found == [
        "Workloads job-high, job-low hold 48 nvidia.com/gpu of flavor train-h100 in ClusterQueue foundation "
        "at once, above its nominal 32 plus borrowing limit 0"
    ]


def test_every_check_runs_in_one_pass() -> None:
    checks = Invariants(LIMITS)
    bad = Snapshot(
        0,
        0,
        cluster_queues=[queue("a", "8", "0", "16")],
        nodes=[node("l-0", "infer-l40s", [QUARANTINE]), node("l-1", "infer-l40s", [QUARANTINE]), vk(True)],
        gate=GateReading(48, {"vk-mock": 0}),
    )
    assert set(kinds(checks.check(bad))) == {QUOTA, QUARANTINE_CAP, GATE}


def test_staging_limits_come_from_its_spec() -> None:
    """staging: cap {maxNodes: 1, maxPercentOfPool: 5}, one provider (mock), chat-api."""
    limits = invariants.limits_of(load(ROOT, "staging"))
    assert limits.max_quarantined == 1
    assert set(limits.pool_caps.values()) == {1}  # 5% of any staging pool rounds to the floor of one
    assert [g.node for g in limits.gates] == ["vk-mock"]
    [gate] = limits.gates
    assert (gate.close_after_seconds, gate.open_after_seconds) == (300, 30)
    assert [s.deployment for s in limits.inference] == ["chat-api"]
    assert limits.quarantine_keys == ("trainyard.dev/gpu-health",)
