"""`generate.py plan ENV`: every pool, team and tier of the model, with the model's numbers."""

from __future__ import annotations

import re

import pytest

from generators import model
from generators.layout import environment_names
from tests.workflow.conftest import REPO, generate


def _row(out: str, *cells: object) -> bool:
    """Some line holds these cells in this order, as whole words separated by blanks."""
    pattern = r"\s+".join(re.escape(str(c)) for c in cells)
    return re.search(rf"^{pattern}(\s|$)", out, re.M) is not None


@pytest.mark.parametrize("name", environment_names(REPO))
def test_plan_lists_every_pool_team_and_tier(name: str) -> None:
    env = model.load(REPO, name)
    out = generate(REPO, "plan", name).stdout
    assert out.startswith(
        f"{name}: {env.display_name} ({env.source_file}); {env.gpus} GPUs, "
        f"{env.schedulable_gpus} schedulable\n"
    )
    for p in env.pools:
        assert _row(
            out,
            p.name,
            p.role,
            p.nodes,
            p.reserve_nodes,
            p.schedulable_nodes,
            p.schedulable_gpus,
        ), p.name
    for team in env.teams:
        for flavor in env.queues[team.name]:
            gpu = next(q for q in flavor.quotas if q.resource.name == env.pool(flavor.pool).gpu_resource)
            limits = [
                gpu.resource.show(v) if v is not None else "-"
                for v in (gpu.nominal, gpu.borrowing_limit, gpu.lending_limit)
            ]
            share = team.shares.get(flavor.pool)
            assert _row(out, team.name, team.cohort or "-", flavor.pool,
                        "borrow" if share is None else f"{share}%", flavor.nodes, " / ".join(limits)), (
                team.name,
                flavor.pool,
            )
    for tier in env.tiers:
        assert _row(
            out, tier.name, tier.role, tier.value, tier.preemption_policy
        )


def test_plan_of_an_unknown_environment_is_a_usage_error() -> None:
    done = generate(REPO, "plan", "nowhere", check=2)
    assert "unknown environment 'nowhere'" in done.stderr


@pytest.mark.parametrize("name", environment_names(REPO))
def test_plan_fits_100_columns_and_names_units(name: str) -> None:
    """Issue 13 item 8: the teams table was ~135 columns and the free-GPU PromQL line made the
    output 334 wide; the header said "memory in bytes" while values were Gi; CPU read `6k`."""
    out = generate(REPO, "plan", name).stdout
    assert max(len(line) for line in out.splitlines()) <= 100, out
    assert "in bytes" not in out
    header = next(line for line in out.splitlines() if line.startswith("team "))
    assert "CPU (cores)" in header and "mem (Gi)" in header
    assert not re.search(r"\b\d+k\b", out), "CPU in cores, no k suffix"


def test_plan_serving_cpu_in_cores() -> None:
    out = generate(REPO, "plan", "prod").stdout
    assert _row(out, "serving", "serving", "infer-l40s", "80%", 50, "400 / - / -", 6000, 45000)
