"""`generate.py plan ENV`: every pool, team and tier of the model, with the model's numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from generators.layout import environment_names
from generators.model.load import load
from tests.support import ROOT
from tests.support.scratch import repo_with, run_cli
from tests.workflow.conftest import generate
from tests.workflow.health_spec import CAP, SMALL


def _row(out: str, *cells: object) -> bool:
    """Some line holds these cells in this order, as whole words separated by blanks."""
    pattern = r"\s+".join(re.escape(str(c)) for c in cells)
    return re.search(rf"^{pattern}(\s|$)", out, re.M) is not None


@pytest.mark.parametrize("name", environment_names(ROOT))
def test_plan_lists_every_pool_team_and_tier(name: str) -> None:
    env = load(ROOT, name)
    out = generate(ROOT, "plan", name).stdout
    assert out.startswith(
        f"{name}: {env.display_name} ({env.source_file}); {env.gpus} GPUs, "
        f"{env.schedulable_gpus} schedulable\n"
    )
    for p in env.pools:
        row = (p.name, p.role, p.nodes, p.reserve_nodes, p.schedulable_nodes, p.schedulable_gpus)
        assert _row(out, *row), p.name
    teams = {t.name: t for t in env.teams}
    for queue in env.cluster_queues:
        team = teams[queue.team]
        for flavor in queue.flavors:
            gpu = next(q for q in flavor.quotas if q.resource.name == env.pool(flavor.pool).gpu_resource)
            limits = [
                gpu.resource.show(v) if v is not None else "-"
                for v in (gpu.nominal, gpu.borrowing_limit, gpu.lending_limit)
            ]
            share = team.shares.get(flavor.pool)
            assert _row(
                out,
                queue.name,  # the name a job gives (kueue.x-k8s.io/queue-name)
                team.cohort or "-",
                flavor.pool,
                "borrow" if share is None else f"{share}%",
                flavor.nodes,
                " / ".join(limits),
            ), (
                queue.name,
                flavor.pool,
            )
    for tier in env.tiers:
        assert _row(out, tier.name, tier.role, tier.value, tier.preemption_policy)


def test_plan_of_an_unknown_environment_is_a_usage_error() -> None:
    done = generate(ROOT, "plan", "nowhere", check=2)
    assert "unknown environment 'nowhere'" in done.stderr


@pytest.mark.parametrize("name", environment_names(ROOT))
def test_plan_fits_100_columns_and_names_units(name: str) -> None:
    """The teams table was once ~135 columns and the free-GPU PromQL line made the
    output 334 wide; the header said "memory in bytes" while values were Gi; CPU read `6k`."""
    out = generate(ROOT, "plan", name).stdout
    assert max(len(line) for line in out.splitlines()) <= 100, out
    assert "in bytes" not in out
    header = next(line for line in out.splitlines() if line.startswith("queue "))
    assert "CPU (cores)" in header and "mem (Gi)" in header
    assert not re.search(r"\b\d+k\b", out), "CPU in cores, no k suffix"


def test_plan_serving_cpu_in_cores() -> None:
    out = generate(ROOT, "plan", "prod").stdout
    assert _row(out, "serving", "serving", "infer-l40s", "80%", 50, "400 / - / -", 6000, 45000)


def test_plan_shows_the_health_settings_and_each_pools_cap_beside_its_reserve(tmp_path: Path) -> None:
    root = repo_with(tmp_path, SMALL)
    (root / "environments" / "small.yaml").write_text(SMALL)
    code, out, err = run_cli(root, "plan", "small")
    assert code == 0, err
    assert out[out.index("Health quarantine\n") :] == (
        "Health quarantine\n"
        "backend trainyard (controller in trainyard-system; dry run: false)\n"
        "fleet cap 4 nodes at once; a pool without its own cap: 3% of its nodes, at least 1\n"
        "watched pool  nodes  reserve  cap (nodes at once)  cap from\n"
        "------------  -----  -------  -------------------  --------\n"
        "train-gb200      36        2                    1  3%\n"
        "train-h100       32        1                    1  3%\n"
    )


def test_plan_names_a_pool_cap_above_its_reserve(tmp_path: Path) -> None:
    spec = SMALL.replace(CAP, "  cap: {maxNodes: 4, maxPercentOfPool: 3, pools: {train-h100: 3}}\n")
    root = repo_with(tmp_path, spec)
    (root / "environments" / "small.yaml").write_text(spec)
    code, out, err = run_cli(root, "plan", "small")
    assert code == 0, err
    row = "train-h100       32        1                    3  own       above reserve: takes quota"
    assert f"\n{row}\n" in out


def test_plan_of_another_backend_names_it(tmp_path: Path) -> None:
    trainyard = "  backend: trainyard\n  image: {repository: ghcr.io/acme/trainyard-gate, tag: 0.1.0}\n"
    spec = SMALL.replace(trainyard + CAP, "  backend: none\n")
    root = repo_with(tmp_path, spec)
    (root / "environments" / "small.yaml").write_text(spec)
    code, out, err = run_cli(root, "plan", "small")
    assert code == 0, err
    assert out.endswith("Health quarantine\nbackend none: no node is quarantined\n")


def test_plan_of_dev_names_nvsentinel_and_the_taints_inference_tolerates() -> None:
    """dev.yaml: health.backend nvsentinel, whose two quarantine taints inference tolerates."""
    out = generate(ROOT, "plan", "dev").stdout
    assert out.endswith(
        "Health quarantine\nbackend nvsentinel (installed on its own); inference tolerates "
        "its taints:\n  nvidia.com/gpu-xid-error, nvidia.com/gpu-nvlink-error\n"
    ), out


def test_plan_names_the_queue_that_reaches_each_pool() -> None:
    """A job asking for prod's L40S GPUs on evals' share must name evals-flex: evals has
    topology pools, so its plain pool is in the -flex queue (the trial's RayJob named evals
    and was never admitted)."""
    out = generate(ROOT, "plan", "prod").stdout
    assert _row(out, "evals-flex", "training", "infer-l40s", "20%", 12, "96 / 48 / -")
    assert _row(out, "evals", "training", "train-h100-a", "5%", 12, "96 / 496 / -")
    assert not _row(out, "evals", "training", "infer-l40s")
