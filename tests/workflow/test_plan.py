"""`generate.py plan ENV`: every pool, team and tier of the model, with the model's numbers."""

from __future__ import annotations

import re

import pytest

from generators import model
from generators.spec.load import environment_names
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
            p.gpu_model,
            p.gpu_resource,
            p.gpus_per_node,
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
            assert _row(out, team.name, team.cohort or "-", flavor.pool, flavor.nodes), (
                team.name,
                flavor.pool,
            )
            assert " / ".join(limits) in out
    for tier in env.tiers:
        assert _row(
            out, tier.name, tier.role, tier.value, tier.preemption_policy
        )


def test_plan_of_an_unknown_environment_is_a_usage_error() -> None:
    done = generate(REPO, "plan", "nowhere", check=2)
    assert "unknown environment 'nowhere'" in done.stderr
