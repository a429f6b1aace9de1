"""Fidelity of the replay (whatif/replay.py) on the real controllers: a trace whose
waits can be worked out by hand gives those waits, the same trace twice gives the same
figures, and a reclaim shows who preempted whom.

One box of staging --speed 10 (real kube-apiserver, scheduler, job controller, KWOK with the
box's pod-complete Stage, Kueue v0.19.2 with webhooks and the rendered queues); each trace
is replayed on it at speed 10 through `replay()`, which `generate.py simulate` calls.

Staging's train-h100 pool, by hand from environments/staging.yaml: 32 nodes minus 1 reserve
= 31 schedulable nodes of 8 GPUs = 248 GPUs in cohort `training`; shares 50/30/20 give by
largest remainder 15.5 -> 16, 9.3 -> 9, 6.2 -> 6 nodes: foundation 128 GPUs nominal,
research 72 (maxUsagePercent 75: floor(31 x 0.75) = 23 nodes = 184 GPUs at most, so 112
borrowed), evals 48 (no maxUsagePercent: no borrowing limit). Every job is `training`
(900000), so nothing preempts within a queue (withinClusterQueue: LowerPriority) and
borrowWithinCohort (maxPriorityThreshold 100000) never reaches a training job.

Trace two-teams.yaml (each job 100 s; times are trace seconds; nothing is preempted, up to
the finish race below):
- r1 (research, 23 x 8 = 184) at 0 and e1 (evals, 6 x 8 = 48) at 0: 184 + 48 = 232 <= 248,
  both admitted at once: wait 0, 0.
- r2 (research, 184) at 10: research already holds its 184 maximum -> waits for r1 to
  finish at 100: wait 100 - 10 = 90.
- e2 (evals, 48) at 60: 232 + 48 = 280 > 248 -> waits for e1 at 100: wait 100 - 60 = 40. At
  100 r2 and e2 together take 232 <= 248: both admitted then.
(The jobs ran 300 s until 2026-12-05, waits 0, 0, 290, 240: the same reasoning; 100 s keeps
every wait clear of 0 by more than the early tolerance and halves the replay.)
Trace reclaim.yaml: r1 (research, 184, 150 s) at 0 borrows 112; e1 (evals, 8, within its
nominal) at 0; f1 (foundation, 16 x 8 = 128, its nominal, 60 s) at 60 finds 248 - 184 - 8 =
56 free, so Kueue reclaims from the only borrower: r1 is preempted by f1 (reason
InCohortReclamation) and f1 is admitted at 60 (wait 0); r1, requeued, needs 184 of the
248 - 128 - 8 = 112 left and is admitted again after f1 finishes (at 120 or later), and runs
its 150 s again: the replay lasts past 120 + 150 = 270. e1's
pod is killed 30 s after its admission; the job controller starts a replacement that runs
the whole 100 s, so e1 holds its quota for 30 + 100 = 130 s. (The Job's status.failed stays
unset: KWOK's pod-delete Stage deletes the killed pod outright, so the job controller sees one
active pod fewer, not a failed one; the replacement's creation time shows the kill.)
The kill carries `xid: 79`: the replay sets XID 79 on the killed pod's node on the box's
synthetic dcgm-exporter, and the real health controller (staging's policy, rendered:
reason xid, quarantineAfterSeconds 0, reconcile 30 s / 10 = 3 s; releaseAfterSeconds 1800 /
10 = 180 s of wall time, longer than the rest of the replay) taints exactly that node
`trainyard.dev/gpu-health=xid` and keeps it so until the replay ends: one quarantine, on one
node, from at most QUARANTINED_WITHIN after the kill (Prometheus scrapes the exporter every
5 s, the controller passes every 3 s: 8 s of wall time, 20 s allowed) to the end (the kill at
about 30, the taint by 30 + 200 = 230 at the latest, the replay past 270).

Per-pool utilisation of two-teams.yaml, by hand: 23 + 23 + 6 + 6 = 58 pods of 8 GPUs, each
bound for its 100 s (within the tolerance below), all on train-h100: 58 x 8 x 100 = 46,400
GPU-seconds = 12.9 GPU-hours, over the pool's 32 x 8 = 256 GPUs (environments/staging.yaml)
x the trace seconds the replay observed.

Trace inference.yaml, staging's serving overflow by hand: the curve drives chat-api
(overflow.inference[0], averageValue 4, minReplicas 2, maxReplicas 12; a replica takes a
whole node of infer-l40s, 8 GPUs, as the inference-scales scene sizes it). Load 0, then 36
from 100 s: the HPA asks for 36 / 4 = 9 replicas; infer-l40s's 8 nodes hold 8, so the 9th
waits until the gate opens vk-mock (8 GPUs: room for one) and is bound there. Spill: one pod
of 8 GPUs on provider mock, bound after the load rose, until the curve ends at 800 s; at
most 8 x (800 - 100) s = 5,600 GPU-seconds = 1.56 GPU-hours, at mock's $0.01 per GPU-hour.
The curve's length is wall time for the HPA (its 15 s sync and scale-up steps are not sped
up) and the gate: the first spill was bound 26.5 s of wall after the load rose (load ~2,
docs/whatif.md), and 800 s leaves 70 s of wall for it.

Trace horizon.yaml, replayed to a horizon of 120 s (`replay(..., until=120)`, what `simulate
--until` and a trace's `until:` do; the cut accounting has unit tests in test_horizon.py):
research may hold at most 23 nodes (184 GPUs), so full (research, 184 GPUs, 300 s) at 0 is
admitted at once and still running at 120: its GPU-hours are 184 x (120 - its admission) /
3600; more (research, 8 GPUs) at 10 waits for full, which ends after the horizon: never
admitted, its wait up to the horizon, 120 - 10 = 110 s; late (evals) at 200 arrives after the
horizon and is never submitted. The cut itself is exact (every figure is clipped at 120). It
runs last on this module's box and deletes its Jobs, then waits until Kueue has dropped their
Workloads, so the box is left as the other tests found it.

Tolerance, stated: a measured wait may exceed the analytic one by at most 10 s of wall time
(100 s of trace time at speed 10) and fall short of it by at most 1 s (10 s). Early: times
are when the replay's watch saw Kueue's writes (sub-second). Late: a job holds its quota
longer than its pods run, by the box's own latency: the job controller creates the pods,
Kueue's TAS ungates them, the scheduler binds them, KWOK marks them Running; at the end the
job controller and Kueue see them finish. Measured on the busy 2-core machine (load 10):
admission to the last pod Running 2 to 4 s, last pod done to Finished 1 to 2 s, so 3 to 5 s
per job, once 10 s (docs/whatif.md "Fidelity"). Noise band, stated: two replays of the same
trace give waits within 6 s wall (60 s of trace time) of each other.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import datetime

import pytest

from box.kube import wait_for
from generators.model.load import load as load_env
from tests.support import ROOT
from tests.whatif.replaying import (
    ANALYTIC_WAITS,
    EARLY,
    HERE,
    LATE,
    RUN,
    SPEED,
    box_at,
    by_job,
    replay_trace,
)
from whatif.replay import JOB_LABEL, KUEUE_API, RUN_LABEL, Replayed, replay
from whatif.report import Cut, Outcome, Side, pool_use, spill
from whatif.run import parts_of, side_of
from whatif.trace import load

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]
NOISE = 6 * SPEED
QUARANTINED_WITHIN = 20 * SPEED  # trace seconds from the XID to the taint (docstring)
TRAIN_H100_GPUS = 32 * 8  # environments/staging.yaml: 32 nodes of 8 GPUs


@pytest.fixture(scope="module")
def box(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    yield from box_at(request, tmp_path_factory, SPEED)


@pytest.fixture(scope="module")
def two_replays(box: object) -> tuple[Replayed, Replayed]:
    return replay_trace(box, "two-teams.yaml"), replay_trace(box, "two-teams.yaml")


@pytest.fixture(scope="module")
def two_runs(two_replays: tuple[Replayed, Replayed]) -> tuple[dict[str, Outcome], dict[str, Outcome]]:
    return by_job(two_replays[0]), by_job(two_replays[1])


def test_two_teams_wait_as_worked_out_by_hand(
    two_runs: tuple[dict[str, Outcome], dict[str, Outcome]],
) -> None:
    first, _ = two_runs
    waits = {name: round(first[name].wait) for name in ANALYTIC_WAITS}
    for name, expected in ANALYTIC_WAITS.items():
        assert expected - EARLY <= waits[name] <= expected + LATE, (name, waits)
    for outcome in first.values():
        assert len(outcome.admissions) == 1, outcome
        # Finding (docs/whatif.md, Fidelity): in 1 of 7 replays Kueue preempted r1 for e2
        # (InCohortReclamation) after r1's pods had all completed, before its Workload was
        # Finished. Waits are unaffected; any other preemption is not in the analysis and fails.
        for event in outcome.preempted:
            assert event.at >= outcome.admissions[0][0] + RUN - EARLY, outcome
        assert outcome.pools == ("train-h100",), outcome
        # held its quota for the 100 s it ran, plus the same latency at most
        start, end = outcome.admissions[0]
        assert RUN - EARLY <= end - start <= RUN + LATE, outcome


def test_the_same_trace_twice_stays_within_the_noise_band(
    two_runs: tuple[dict[str, Outcome], dict[str, Outcome]],
) -> None:
    first, second = two_runs
    for name in ANALYTIC_WAITS:
        assert abs(first[name].wait - second[name].wait) <= NOISE, (name, first[name], second[name])
        assert abs(first[name].gpu_hours - second[name].gpu_hours) <= first[name].gpus * NOISE / 3600


def test_pool_utilisation_counts_the_pods_where_the_scheduler_bound_them(
    two_replays: tuple[Replayed, Replayed],
) -> None:
    replayed = two_replays[0]
    assert len(replayed.bound) == 58, replayed.bound  # every pod bound once: nothing preempted or killed
    for pod in replayed.bound:
        assert (pod.pool, pod.gpus) == ("train-h100", 8), pod
        assert RUN - EARLY <= pod.end - pod.start <= RUN + LATE, pod
    side = Side(
        "head", replayed.outcomes, replayed.bound, (), (("train-h100", TRAIN_H100_GPUS),), replayed.span
    )
    [use] = pool_use(side)
    low, high = 58 * 8 * (RUN - EARLY), 58 * 8 * (RUN + LATE)
    assert low / 3600 <= use.gpu_hours <= high / 3600, use
    assert (
        low / (TRAIN_H100_GPUS * replayed.span) <= use.utilisation <= high / (TRAIN_H100_GPUS * replayed.span)
    )
    assert not replayed.quarantines, replayed.quarantines  # no fault in this trace


def test_the_inference_curve_scales_the_service_and_spills_to_the_provider(box: object) -> None:
    from box.up import Box

    assert isinstance(box, Box)
    replayed = replay_trace(box, "inference.yaml")
    assert replayed.complete, "the curve should end inside the replay's budget"
    serving = [b for b in replayed.bound if b.job == "chat-api"]
    in_cluster = {b.node for b in serving if b.pool == "infer-l40s"}
    spilled = [b for b in serving if b.provider]
    assert len(in_cluster) == 8, serving  # one replica per node of the pool
    assert spilled and {(b.node, b.provider, b.gpus) for b in spilled} == {("vk-mock", "mock", 8)}, serving
    for pod in spilled:
        assert pod.start >= 100 - EARLY, pod  # only once the load rose
    ordered = sorted(spilled, key=lambda b: b.start)
    print(f"first spill bound at {ordered[0].start:.0f} s of trace")  # the curve's margin, for docs/whatif.md
    for before, after in itertools.pairwise(ordered):
        assert after.start >= before.end - EARLY, ordered  # vk-mock holds one replica at a time
    [mock] = [s for s in spill(side_of("head", box.env, replayed)) if s.provider == "mock"]
    hours = sum(8 * (b.end - b.start) for b in spilled) / 3600
    assert mock.gpu_hours == pytest.approx(hours), mock
    assert 0 < mock.gpu_hours <= 8 * (800 - 100) / 3600, mock
    assert mock.usd == pytest.approx(mock.gpu_hours * 0.01), mock  # environments/staging.yaml


def test_a_reclaim_names_the_preemptor_and_the_victim(box: object) -> None:
    replayed = replay_trace(box, "reclaim.yaml")
    outcomes = by_job(replayed)
    r1, f1 = outcomes["r1"], outcomes["f1"]
    assert [(p.victim, p.preemptor, p.reason) for p in r1.preempted] == [("r1", "f1", "InCohortReclamation")]
    assert not f1.preempted
    assert 0 - EARLY <= f1.wait <= 0 + LATE, f1
    assert len(r1.admissions) == 2, r1
    assert 60 - EARLY <= r1.admissions[0][1] <= 60 + LATE, r1  # evicted when f1 arrived
    assert f1.finished is not None and r1.admissions[1][0] >= f1.finished - EARLY, (r1, f1)
    e1 = outcomes["e1"]
    assert len(e1.admissions) == 1 and not e1.preempted, e1
    held = e1.admissions[0][1] - e1.admissions[0][0]
    assert 130 - EARLY <= held <= 130 + 2 * LATE, e1  # two pod starts and one finish of latency
    # The XID on the killed pod's node: the health controller quarantined that node alone.
    first_e1 = min((b for b in replayed.bound if b.job == "e1"), key=lambda b: b.start)
    killed_at = e1.admissions[0][0] + 30
    [quarantine] = replayed.quarantines
    assert (quarantine.node, quarantine.pool, quarantine.reason) == (first_e1.node, "train-h100", "xid")
    assert killed_at - EARLY <= quarantine.start <= killed_at + QUARANTINED_WITHIN, (quarantine, e1)
    assert quarantine.end == replayed.span, quarantine  # still quarantined when the replay ended
    from box.up import Box

    assert isinstance(box, Box)
    kube = box.client()
    try:
        selector = f"{RUN_LABEL}={replayed.run},{JOB_LABEL}=e1"
        [job] = kube.list("batch/v1", "Job", "evals", label_selector=selector)
        pods = kube.list("v1", "Pod", "evals", label_selector=selector)
    finally:
        kube.close()
    # The pod that completed is the replacement: the job controller created it when the first
    # was killed, at least 3 s of wall time (30 s / 10) after the Job started (1 s of slack for
    # whole-second timestamps); without the kill it is created within a second of the start.
    [done] = [p for p in pods if p["status"].get("phase") == "Succeeded"]
    started = datetime.fromisoformat(job["status"]["startTime"])
    created = datetime.fromisoformat(done["metadata"]["creationTimestamp"])
    assert (created - started).total_seconds() >= 2, (job["status"], done["metadata"])
    assert job["status"].get("succeeded") == 1, job["status"]


def test_the_replay_stops_at_the_horizon(box: object) -> None:
    from box.up import Box

    assert isinstance(box, Box)
    trace = load(HERE / "horizon.yaml", "tests/whatif/horizon.yaml", load_env(ROOT, "staging"))
    kube = box.client()
    try:
        parts = parts_of(box)
        replayed = replay(kube, box.client, trace, "nvidia.com/gpu", SPEED, lambda _: None, parts, 120)
        # full and more are still on the box: delete them, and wait until Kueue has dropped
        # their Workloads (the garbage collector follows the Job), before any assertion
        jobs = kube.list("batch/v1", "Job", "research", label_selector=f"{RUN_LABEL}={replayed.run}")
        uids = {j["metadata"]["uid"] for j in jobs}
        for job in jobs:
            kube.delete("batch/v1", "Job", job["metadata"]["name"], "research")

        def dropped() -> bool:
            workloads = kube.list(KUEUE_API, "Workload", "research")
            owners = {o["uid"] for w in workloads for o in w["metadata"].get("ownerReferences") or []}
            return not owners & uids

        wait_for(dropped, 60, "the horizon replay's Workloads deleted", 0.5)
    finally:
        kube.close()
    assert len(uids) == 2, jobs  # full and more; late arrives after the horizon: never submitted
    assert replayed.cut == Cut(120.0, 1, 1, 1)
    assert replayed.span == 120.0
    assert replayed.wall_seconds < 120 / SPEED + 5  # it stopped at the horizon, not at full's end
    outcomes = {o.job: o for o in replayed.outcomes}
    assert sorted(outcomes) == ["full", "more"]
    full, more = outcomes["full"], outcomes["more"]
    assert full.finished is None and len(full.admissions) == 1
    start, end = full.admissions[0]
    assert -EARLY <= start <= LATE and end == 120.0
    assert full.gpu_hours == pytest.approx(184 * (120 - start) / 3600)
    assert more.admissions == () and more.ended == 120.0
    assert 110 - EARLY <= more.wait <= 110  # arrival seen at 10 s or a little after
    assert all(pod.end <= 120.0 for pod in replayed.bound)
