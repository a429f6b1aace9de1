"""The report's arithmetic (whatif/report.py) on outcomes written by hand; every
expected figure is worked out in the comment beside it."""

from __future__ import annotations

import json

from tests.whatif.outcomes import A1, A2, B1, B2
from whatif.report import (
    Bound,
    Outcome,
    PoolUse,
    Preemption,
    Quarantine,
    Side,
    Spill,
    as_json,
    duration,
    hold_latency,
    markdown,
    nearest_rank,
    pool_use,
    preemptions,
    spill,
    summary,
    text,
)


def test_nearest_rank() -> None:
    waits = [30.0, 0.0, 20.0, 10.0]
    # sorted 0, 10, 20, 30: p50 is rank ceil(0.5 x 4) = 2 -> 10; p95 rank ceil(3.8) = 4 -> 30
    assert nearest_rank(waits, 50) == 10.0
    assert nearest_rank(waits, 95) == 30.0
    assert nearest_rank([7.0], 95) == 7.0
    assert nearest_rank([], 50) == 0.0


def test_durations_read_as_time() -> None:
    assert [duration(s) for s in (0, 42.4, 60, 245, 3600, 3900, 90061)] == [
        "0s",
        "42s",
        "1m00s",
        "4m05s",
        "1h00m",
        "1h05m",
        "25h01m",
    ]


def test_waits_and_gpu_hours_per_team_and_tier() -> None:
    rows = {(r.team, r.tier): r for r in summary([A1, A2, B1, B2])}
    a = rows[("a", "training")]
    assert (a.jobs, a.never, a.wait_p50, a.wait_p95, a.wait_max) == (2, 0, 0.0, 600.0, 600.0)
    assert a.gpu_hours == 8 + 4 + 8
    assert a.preempted == 1
    b = rows[("b", "training-critical")]
    assert (b.jobs, b.never, b.wait_p50, b.wait_p95, b.wait_max) == (2, 1, 200.0, 7000.0, 7000.0)
    assert b.gpu_hours == 64.0
    assert b.preempted == 0


def test_who_preempted_whom() -> None:
    assert preemptions([A1, A2, B1, B2]) == [("b", "a", 1)]
    stranger = Outcome(
        "c",
        "c",
        "training",
        8,
        0.0,
        ((0.0, 10.0),),
        10.0,
        10.0,
        preempted=(Preemption("c", "?", "InClusterQueue", 5.0),),
    )
    assert preemptions([stranger]) == [("?", "c", 1)]


def test_base_to_head_with_the_difference() -> None:
    # Head: a1 now waits 300 (p50 of 300 and 600 by nearest rank is 300), b unchanged.
    head_a1 = Outcome("a1", "a", "training", 16, 0.0, ((300.0, 2100.0),), 2100.0, 9000.0)
    out = text(Side("head", (head_a1, A2, B1, B2)), Side("base main", (A1, A2, B1, B2)), "what-if t")
    lines = out.splitlines()
    assert lines[0] == "what-if t"
    assert lines[2].split() == [
        "team",
        "tier",
        "jobs",
        "never",
        "admitted",
        "wait",
        "p50",
        "wait",
        "p95",
        "wait",
        "max",
        "GPU-hours",
        "preempted",
    ]
    a_row = lines[4]
    assert "0s -> 5m00s (+5m00s)" in a_row  # p50 0 -> 300
    assert "10m00s -> 10m00s (+0s)" in a_row  # p95 and max stay 600
    assert "20.0 -> 20.0 (+0.0)" in a_row  # a1 holds as long, later
    assert "1 -> 1 (+0)" in a_row
    assert "3m20s -> 3m20s (+0s)" in lines[5]  # b's p50 stays 200
    assert lines[7:11] == [
        "preemptions, base main:",
        "  b preempted a: 1",
        "preemptions, head:",
        "  b preempted a: 1",
    ]
    # the outcomes above name no duration, so no job's latency can be told; no pool capacity
    # given (no pool table) and no quarantine seen
    assert lines[11:] == [
        "quarantines, base main: none",
        "quarantines, head: none",
        "latency, base main: no job was admitted once and finished",
        "latency, head: no job was admitted once and finished",
    ]


def test_hold_latency_is_the_median_of_how_much_longer_a_job_held_than_it_ran() -> None:
    # held 1830, 1845 and 1900 s for 1800 s of pods: 30, 45, 100 -> median (nearest rank) 45;
    # A2 was admitted twice and B2 never: neither counts.
    held = [
        Outcome(
            f"j{i}",
            "a",
            "training",
            8,
            0.0,
            ((0.0, 1800.0 + extra),),
            1800.0 + extra,
            9000.0,
            duration=1800.0,
        )
        for i, extra in enumerate((100.0, 30.0, 45.0))
    ]
    assert hold_latency([*held, A2, B2]) == (45.0, 3)
    assert hold_latency([A2, B2]) is None
    line = text(Side("head", tuple(held)), None, "t").splitlines()[-1]
    assert line == (
        "latency, head: a job held its quota 45s longer than its pods ran (median of 3); "
        "waits behind it come out that much late"
    )


def test_markdown_table() -> None:
    out = markdown(Side("head", (A1, B2)), None, "what-if t").splitlines()
    assert out[0] == "### what-if t"
    assert out[2] == (
        "| team | tier | jobs | never admitted | wait p50 | wait p95 | wait max | GPU-hours | preempted |"
    )
    assert out[4] == "| a | training | 1 | 0 | 0s | 0s | 0s | 8.0 | 0 |"
    assert out[5] == "| b | training-critical | 1 | 1 | 1h56m | 1h56m | 1h56m | 0.0 | 0 |"  # 7000 s
    assert out[7] == "Preemptions, head: no preemptions"


# Two pools of a made-up spec: train 2 nodes x 8 = 16 GPUs, infer 1 x 8. The replay observed
# 3600 s of trace time.
CAPACITY = (("train", 16), ("infer", 8))
HEAD_PODS = (
    Bound("a1", "train", "n-0", 8, 0.0, 1800.0),  # 8 x 1800 = 14400 GPU-s
    Bound("a1", "train", "n-1", 8, 900.0, 2700.0),  # 14400 more: 28800 = 8.0 GPU-hours
    Bound("a1", "?", "vk-mock", 8, 0.0, 3600.0),  # a node of no pool of the spec: not a row
)
BASE_PODS = (Bound("a1", "train", "n-0", 8, 0.0, 1800.0),)  # 4.0 GPU-hours


def test_pool_utilisation_is_bound_gpu_time_over_the_pools_gpus_and_the_span() -> None:
    rows = pool_use(Side("head", (A1,), HEAD_PODS, (), CAPACITY, 3600.0))
    assert rows == [PoolUse("train", 16, 8.0, 0.5), PoolUse("infer", 8, 0.0, 0.0)]  # 28800 / (16 x 3600)


def test_pools_and_quarantines_base_to_head() -> None:
    hot = Quarantine("n-1", "train", "xid", 600.0, 1500.0)
    head = Side("head", (A1,), HEAD_PODS, (hot,), CAPACITY, 3600.0)
    base = Side("base main", (A1,), BASE_PODS, (), CAPACITY, 3600.0)
    lines = text(head, base, "t").splitlines()
    at = lines.index(next(line for line in lines if line.split()[:2] == ["pool", "GPUs"]))
    # the text table pads its columns: compare the words
    assert " ".join(lines[at + 2].split()) == "train 16 -> 16 4.0 -> 8.0 (+4.0) 25.0% -> 50.0% (+25.0 points)"
    assert " ".join(lines[at + 3].split()) == "infer 8 -> 8 0.0 -> 0.0 (+0.0) 0.0% -> 0.0% (+0.0 points)"
    assert "quarantines, base main: none" in lines
    assert "quarantines, head: 1 on 1 node, 15m00s of node time: n-1 (xid, 15m00s)" in lines  # 1500 - 600
    md = markdown(head, base, "t").splitlines()
    assert "| train | 16 -> 16 | 4.0 -> 8.0 (+4.0) | 25.0% -> 50.0% (+25.0 points) |" in md
    assert "quarantines, head: 1 on 1 node, 15m00s of node time: n-1 (xid, 15m00s)" in md
    sides = json.loads(as_json(head, base, "t"))["sides"]
    assert sides["head"]["pools"][0] == {"pool": "train", "gpus": 16, "gpu_hours": 8.0, "utilisation": 0.5}
    assert sides["head"]["quarantines"] == [
        {"node": "n-1", "pool": "train", "reason": "xid", "start": 600.0, "end": 1500.0}
    ]


def test_spill_per_provider_is_gpu_time_on_its_virtual_node_and_its_price() -> None:
    # mock at $0.01 per GPU-hour, lambda at $2.50: one 8-GPU replica on vk-mock for 1800 s
    # (4.0 GPU-hours, $0.04), nothing on lambda; the base spilled nothing
    prices = (("mock", 0.01), ("lambda", 2.5))
    pods = (
        Bound("chat-api", "?", "vk-mock", 8, 1800.0, 3600.0, "mock"),
        Bound("chat-api", "infer", "n-9", 8, 0.0, 3600.0),  # in the cluster: not spill
    )
    head = Side("head", (A1,), pods, (), CAPACITY, 3600.0, prices)
    base = Side("base main", (A1,), pods[1:], (), CAPACITY, 3600.0, prices)
    assert spill(head) == [Spill("mock", 4.0, 0.04), Spill("lambda", 0.0, 0.0)]
    lines = [" ".join(line.split()) for line in text(head, base, "t").splitlines()]
    assert "mock 0.00 -> 4.00 (+4.00) 0.00 -> 0.04 (+0.04)" in lines
    assert "lambda 0.00 -> 0.00 (+0.00) 0.00 -> 0.00 (+0.00)" in lines
    assert "| mock | 0.00 -> 4.00 (+4.00) | 0.00 -> 0.04 (+0.04) |" in markdown(head, base, "t").splitlines()
