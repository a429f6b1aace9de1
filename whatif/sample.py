"""The shipped sample trace of an environment (traces/<env>.yaml), drawn from published figures.

    python -m whatif.sample staging --inference > traces/staging.yaml
    python -m whatif.sample prod --scale 8 > traces/prod.yaml
    python -m whatif.sample dev > traces/dev.yaml

Same seed, same bytes. `--scale N` sizes the trace for `simulate ENV --scale N` (the node
counts divided as `box up --scale N` divides them, box/scale.py). The derivation
is written into the trace's header (HEADER below), figure by figure, with which ones are
published and which are this project's assumptions.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

from generators.model.environment import Environment
from generators.model.load import load
from generators.model.overflow import inference_pools
from generators.model.quantity import parse as parse_quantity
from generators.model.types import Pool

SEED = 23  # fixed: the same sample, byte for byte, on every run
DAY_SECONDS = 86400
TARGET_LOAD = 0.7  # assumption: GPU-hours asked / GPU-hours the training pools hold in a day
# Job sizes in GPUs and their weights: 55% of the jobs take 1 GPU (the median GPU job is 1 GPU
# in every public trace: Philly, Helios, Acme; over half, so the median is 1 in any draw); the
# rest whole 8-GPU nodes up to the largest nominal quota, weighted so the mean is 26.9 GPUs
# (Kalos, the LLM cluster of Acme: mean 26.8).
SIZES = ((1, 0.55), (8, 0.11), (16, 0.05), (32, 0.07), (64, 0.09), (128, 0.13))
SHORTEST, LONGEST = 5 * 60, 8 * 3600  # assumption: durations log-uniform between them
FAILURES_PER_GPU_HOUR = 20e-6  # Llama 3: 419 unexpected interruptions, 54 days, 16,384 GPUs
CRITICAL_SHARE = 0.05  # assumption: 1 job in 20 is training-critical
# The serving curve (--inference), all assumption: a cosine day, lowest at LOW_HOUR and
# highest twelve hours later, in hourly steps, from minReplicas to SPILL_REPLICAS past what
# the inference pools hold (one replica a node), so the afternoon spills to a provider.
LOW_HOUR = 4
SPILL_REPLICAS = 2

HEADER = """\
# Sample trace for {env}{at_scale}: one day of training jobs, drawn by
# whatif/sample.py (seed {seed}; regenerate:
#   python -m whatif.sample {env}{scale_option}{inference_option} > traces/{env}.yaml).
# Replay it:
#   python generate.py simulate {env} --trace traces/{env}.yaml{scale_option} [--base main] [--speed X]
#{scaled}
# Derivation, figure by figure (published figures, each cited; assumptions marked):
# - Job sizes: 55% of the jobs ask for 1 GPU (the median GPU job is 1 GPU in every public
#   trace: Microsoft Philly, Jeon et al., USENIX ATC 2019; SenseTime Helios, Hu et al., SC 2021;
#   Shanghai AI Lab Acme, Hu et al., NSDI 2024); the rest whole {per_node}-GPU nodes of 8 to
#   {largest} GPUs ({weights}), so the mean is {design_mean:.1f} GPUs{kalos}.
#   Kalos's largest job, 1,024 GPUs, is scaled down to {largest}: the largest team nominal
#   quota of {env}'s largest training pool ({pool}, {pool_gpus} schedulable GPUs), the
#   largest job a team runs without borrowing. Sizes are dealt in exactly these
#   proportions (largest remainder) and shuffled: this draw has median {median} and mean {mean:.1f}.
# - Durations: ASSUMPTION, log-uniform from 5 min to 8 h, dealt at its quantiles and
#   shuffled (median {median_minutes:.0f} min); no published figure is used. Replace with a real
#   cluster's: generate.py trace from-workloads (docs/whatif.md).
# - Arrivals: ASSUMPTION, a Poisson process over 24 h at the rate that asks for {load:.0%} of
#   the {pools} GPU-hours ({jobs} jobs, {asked:.0f} of {held:.0f} GPU-hours in this draw).
# - Teams: each job goes to a team with the probability of its share of {pool}
#   ({shares}).
# - Tiers: ASSUMPTION, 1 job in 20 is training-critical, the rest training.
# - Failures: about 20 unexpected interruptions per million GPU-hours (Llama 3, Dubey et al.,
#   2024: 419 in 54 days on 16,384 GPUs); each job fails with probability 20e-6 x its
#   GPU-hours, at a uniform point of its run: {failures} in this draw.
# - Horizon: the replay stops at midnight (until: 86400): jobs still waiting then count as
#   never admitted, running ones count their GPU-hours up to it (--until end: run them out).
"""


def _training(env: Environment) -> list[Pool]:
    """The pools training jobs run on: role training, else shared (dev's one pool)."""
    return [p for p in env.pools if p.role == "training"] or [p for p in env.pools if p.role == "shared"]


def _held(pool: Pool) -> int:
    return (pool.nodes - pool.reserve_nodes) * pool.gpus_per_node


def _pool(env: Environment) -> tuple[Pool, int]:
    """The largest training pool and the largest team nominal GPUs in it."""
    pool = max(_training(env), key=lambda p: p.nodes * p.gpus_per_node)
    nominal = max(f.nodes for q in env.cluster_queues for f in q.flavors if f.pool == pool.name)
    return pool, nominal * pool.gpus_per_node


def _most(env: Environment, team: str) -> int:
    """The largest job `team`'s default queue (the one the trace loader picks) can ever
    admit: per flavor its nominal GPUs plus its borrowing limit (none: the rest of the
    pool's schedulable GPUs), the largest flavor (Kueue puts a pod set on one)."""
    queues = [q for q in env.cluster_queues if q.team == team]
    queue = next((q for q in queues if q.name == team), queues[0])
    most = 0
    for flavor in queue.flavors:
        pool = env.pool(flavor.pool)
        for quota in flavor.quotas:
            if quota.resource.name == pool.gpu_resource:
                limit = quota.borrowing_limit
                most = max(most, int(_held(pool) if limit is None else quota.nominal + limit))
    return most


def _dealt(weights: list[tuple[int, float]], count: int) -> list[int]:
    """`count` values in the proportions of `weights` (largest remainder), in weight order."""
    exact = [(value, weight * count) for value, weight in weights]
    counts = [math.floor(x) for _, x in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: -(exact[i][1] - counts[i]))
    for i in by_remainder[: count - sum(counts)]:
        counts[i] += 1
    return [value for (value, _), n in zip(exact, counts, strict=True) for _ in range(n)]


INFERENCE_HEADER = """\
# - Serving load ({service}): ASSUMPTION, no published diurnal serving-load figure is used:
#   a cosine day from {low} replicas (minReplicas) at {low_hour:02d}:00 to {high} at {high_hour:02d}:00
#   ({pool_nodes} nodes of {pools} hold one replica each: {spill} more at the peak, for the
#   providers), in hourly steps; the curve is the HPA's metric, {average} per replica (the
#   spec's averageValue), so the HPA asks for that many replicas.
"""


def curve(env: Environment) -> tuple[list[tuple[int, float]], str]:
    """The serving load curve of `env`'s first inference service (hourly steps, see LOW_HOUR)
    and its header lines."""
    assert env.overflow is not None and env.overflow.inference, "no overflow.inference to load"
    service = env.overflow.inference[0]
    pools = inference_pools(env.pools)[:1]  # where the replay's Serving puts the replicas (serving.py)
    nodes = sum(p.nodes for p in pools)
    low, high = service.min_replicas, min(service.max_replicas, nodes + SPILL_REPLICAS)
    average = float(parse_quantity(service.metric_average_value).value)
    steps: list[tuple[int, float]] = []
    for hour in range(24):
        replicas = round(low + (high - low) * (1 - math.cos(2 * math.pi * (hour - LOW_HOUR) / 24)) / 2)
        if not steps or steps[-1][1] != replicas * average:
            steps.append((hour * 3600, replicas * average))
    header = INFERENCE_HEADER.format(
        service=service.deployment,
        low=low,
        high=high,
        low_hour=LOW_HOUR,
        high_hour=(LOW_HOUR + 12) % 24,
        pool_nodes=nodes,
        pools=", ".join(p.name for p in pools),
        spill=high - min(high, nodes),
        average=service.metric_average_value,
    )
    return steps, header


def _job_lines(
    rng: random.Random, env: Environment, teams: list[tuple[str, int]], jobs: list[tuple[float, int, int]]
) -> tuple[list[str], float, int]:
    """One trace line per (arrival, GPUs, seconds), drawing team, tier and failure from `rng`
    in a fixed order (the shipped traces depend on it); with the GPU-hours asked and how many
    jobs fail."""
    per_node = _pool(env)[0].gpus_per_node
    critical = env.training_tiers[0].name
    lines, asked, failures = [], 0.0, 0
    most = {t: _most(env, t) for t, _ in teams}
    for index, (at, gpus, seconds) in enumerate(jobs):
        # A job only the teams whose queue can ever admit it may ask for: a larger one would
        # wait the whole replay (prod at --scale 8: evals' most is 72 GPUs, the largest job 120).
        able = [(t, s) for t, s in teams if most[t] >= gpus] or teams
        team = rng.choices([t for t, _ in able], [s for _, s in able])[0]
        tier = critical if rng.random() < CRITICAL_SHARE else "training"
        pods, per_pod = (1, gpus) if gpus <= per_node else (math.ceil(gpus / per_node), per_node)
        asked += gpus * seconds / 3600
        fields = [
            f"name: j{index + 1:04d}",
            f"at: {round(at)}",
            f"team: {team}",
            f"tier: {tier}",
            f"pods: {pods}",
            f"perPod: {{gpus: {per_pod}}}",
            f"duration: {seconds}",
        ]
        if rng.random() < FAILURES_PER_GPU_HOUR * gpus * seconds / 3600:
            failures += 1
            fields.append(f"failure: {{after: {round(rng.uniform(1, seconds))}}}")
        lines.append("  - {" + ", ".join(fields) + "}")
    return lines, asked, failures


def sample(env: Environment, seed: int = SEED, scale: int = 1, inference: bool = False) -> str:
    """The trace text of `env` (already scaled by `scale`, which the header names); with
    `inference`, its serving load curve too (`curve`)."""
    rng = random.Random(seed)
    pool_of, largest = _pool(env)
    held_gpus = sum(_held(p) for p in _training(env))  # jobs of a team's queue use all its pools
    pool, per_node = pool_of.name, pool_of.gpus_per_node
    teams = [(t.name, t.shares[pool]) for t in env.teams if t.shares.get(pool)]
    mean_size = sum(min(s, largest) * w for s, w in SIZES)
    weights: dict[int, float] = {}
    for size, weight in SIZES[1:]:  # the whole-node sizes, as capped at the largest quota
        weights[min(size, largest)] = weights.get(min(size, largest), 0.0) + weight
    mean_duration = (LONGEST - SHORTEST) / math.log(LONGEST / SHORTEST)
    held = held_gpus * DAY_SECONDS / 3600
    rate = TARGET_LOAD * held / (mean_size * mean_duration / 3600) / DAY_SECONDS  # jobs per second
    arrivals: list[float] = []
    while (at := (arrivals[-1] if arrivals else 0.0) + rng.expovariate(rate)) < DAY_SECONDS:
        arrivals.append(at)
    count = len(arrivals)
    sizes = _dealt([(min(s, largest), w) for s, w in SIZES], count)
    rng.shuffle(sizes)
    span = math.log(LONGEST / SHORTEST)
    durations = [round(SHORTEST * math.exp(span * (i + 0.5) / count)) for i in range(count)]
    rng.shuffle(durations)
    lines, asked, failures = _job_lines(rng, env, teams, list(zip(arrivals, sizes, durations, strict=True)))
    ordered = sorted(sizes)
    pools = _training(env)
    header = HEADER.format(
        env=env.name,
        at_scale=f" at --scale {scale}" if scale > 1 else "",
        scale_option=f" --scale {scale}" if scale > 1 else "",
        inference_option=" --inference" if inference else "",
        scaled=(
            f"\n# Sized for {env.name} with its node counts divided by {scale}, as box up --scale {scale} "
            "divides them\n# (box/scale.py): the pools and quotas below are the scaled ones.\n#"
            if scale > 1
            else ""
        ),
        per_node=per_node,
        weights=", ".join(f"{size}: {weight:.0%}" for size, weight in weights.items()),
        design_mean=mean_size,
        kalos=", Kalos's (Acme's LLM\n#   cluster) mean of 26.8"
        if abs(mean_size - 26.8) < 0.5
        else f"\n#   (Kalos, Acme's LLM cluster: 26.8; {env.name}'s largest quota caps the sizes)",
        pools=("pool's" if len(pools) == 1 else f"training pools' ({', '.join(p.name for p in pools)})"),
        seed=seed,
        largest=largest,
        pool=pool,
        pool_gpus=_held(pool_of),
        median=ordered[(count - 1) // 2],
        mean=sum(sizes) / count,
        median_minutes=sorted(durations)[(count - 1) // 2] / 60,
        load=TARGET_LOAD,
        jobs=count,
        asked=asked,
        held=held,
        shares=", ".join(f"{t} {s}%" for t, s in teams),
        failures=failures,
    )
    served = ""
    if inference:
        steps, lines_of_curve = curve(env)
        header += lines_of_curve
        load = "".join(f"    - {{at: {at}, value: {value:g}}}\n" for at, value in steps)
        served = f"inference:\n  load:\n{load}  until: {DAY_SECONDS}\n"
    # The day is the replay's window: `until` cuts it at midnight (docs/whatif.md "The horizon").
    return (
        header + f"environment: {env.name}\nuntil: {DAY_SECONDS}\njobs:\n" + "\n".join(lines) + "\n" + served
    )


def main(argv: list[str]) -> int:
    import argparse
    import tempfile

    from box.scale import scaled_checkout

    parser = argparse.ArgumentParser(prog="python -m whatif.sample")
    parser.add_argument("env", metavar="ENV")
    parser.add_argument("--scale", type=int, default=1, metavar="N", help="size it for simulate --scale N")
    parser.add_argument("--inference", action="store_true", help="add a serving load curve (assumed)")
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="trainyard-sample-") as temp:
        scaled = (
            scaled_checkout(root, args.env, args.scale, Path(temp) / "checkout") if args.scale > 1 else root
        )
        sys.stdout.write(sample(load(scaled, args.env), scale=args.scale, inference=args.inference))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
