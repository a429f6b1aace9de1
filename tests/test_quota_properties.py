"""Property tests over random valid environments: quotas conserve capacity exactly, output
is deterministic and independent of team order, and every name is valid."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generators.model import quantity
from generators.model.environment import Environment
from generators.model.load import load
from generators.output import yamlemit
from generators.pipeline import render
from tests.support.examples import examples
from tests.support.scratch import write_environment

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


@st.composite
def shares_for(draw: st.DrawFn, n_teams: int) -> list[int]:
    """Random non-negative integer shares over n_teams that sum to 100."""
    cuts = sorted(draw(st.lists(st.integers(0, 100), min_size=n_teams - 1, max_size=n_teams - 1)))
    bounds = [0, *cuts, 100]
    return [bounds[i + 1] - bounds[i] for i in range(n_teams)]


@st.composite
def environments(draw: st.DrawFn) -> dict[str, Any]:
    n_pools = draw(st.integers(1, 4))
    n_teams = draw(st.integers(1, 7))
    pools = []
    for i in range(n_pools):
        nodes = draw(st.integers(1, 600))
        pools.append(
            {
                "name": f"pool-{i}",
                "role": draw(st.sampled_from(["training", "inference", "shared"])),
                "gpu": {"model": "H100", "perNode": draw(st.sampled_from([1, 2, 4, 8]))},
                "nodes": nodes,
                "reserveNodes": draw(st.integers(0, nodes - 1)),
                "cpu": draw(st.sampled_from([64, 96, 208, "95500m"])),
                "memory": draw(st.sampled_from(["512Gi", "1800Gi", "1000G", "2Ti"])),
                "extraResources": draw(st.sampled_from([{}, {"rdma/ib": 8}])),
                "nodeLabels": {"trainyard.dev/pool": f"pool-{i}"},
            }
        )
    teams: list[dict[str, Any]] = [
        {"name": f"team-{j}", "namespaces": [f"ns-{j}"], "cohort": "all", "shares": {}}
        for j in range(n_teams)
    ]
    for pool in pools:
        for team, share in zip(teams, draw(shares_for(n_teams)), strict=True):
            team["shares"][pool["name"]] = share
    for team in teams:
        if draw(st.booleans()):
            # At least the team's largest partial share: below it the spec refuses the cap
            # (it could not hold; a pool owned whole has nothing to borrow).
            floor = max((s for s in team["shares"].values() if s < 100), default=0)
            team["maxUsagePercent"] = draw(st.integers(floor, 100))
        if draw(st.booleans()):
            team["lendablePercent"] = draw(st.integers(0, 100))
    return {
        "extends": "_defaults.yaml",
        "name": "random",
        "cluster": {"kubernetesVersion": "1.36.2"},
        "pools": pools,
        "cohorts": [{"name": "all"}],
        "teams": teams,
    }


def _load(tmp: Path, spec: dict[str, Any]) -> Environment:
    write_environment(tmp, "random", yamlemit.dump(spec))
    return load(tmp, "random")


def _nominal_sums(files: list[render.RenderedFile]) -> dict[tuple[str, str], Fraction]:
    sums: dict[tuple[str, str], Fraction] = {}
    for f in files:
        if f.obj["kind"] != "ClusterQueue":
            continue
        for group in f.obj["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]
                for cell in flavor["resources"]:
                    key = (flavor["name"], cell["name"])
                    sums[key] = sums.get(key, Fraction(0)) + quantity.parse(cell["nominalQuota"]).value
                    if "lendingLimit" in cell:
                        assert (
                            quantity.parse(cell["lendingLimit"]).value
                            <= quantity.parse(cell["nominalQuota"]).value
                        )
    return sums


@settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(environments())
def test_quotas_conserve_capacity_and_output_is_stable(tmp_path_factory: Any, spec: dict[str, Any]) -> None:
    tmp = tmp_path_factory.mktemp("env")
    env = _load(tmp, spec)
    files = render.render_environment(env)
    sums = _nominal_sums(files)
    for pool in spec["pools"]:
        schedulable = pool["nodes"] - pool["reserveNodes"]
        per_node = {
            "nvidia.com/gpu": pool["gpu"]["perNode"],
            "cpu": pool["cpu"],
            "memory": pool["memory"],
            **pool["extraResources"],
        }
        for resource, amount in per_node.items():
            assert sums[(pool["name"], resource)] == schedulable * quantity.parse(amount).value
    # deterministic, and independent of the order teams are written in
    assert [f.text for f in render.render_environment(_load(tmp, spec))] == [f.text for f in files]
    reordered = {**spec, "teams": list(reversed(spec["teams"]))}
    assert {f.path: f.obj for f in render.render_environment(_load(tmp, reordered))} == {
        f.path: f.obj for f in files
    }
    for f in files:
        meta = f.obj["metadata"]
        assert DNS_LABEL.fullmatch(meta["name"]) and len(meta["name"]) <= 63
        assert all(LABEL_VALUE.fullmatch(v) and len(v) <= 63 for v in meta.get("labels", {}).values())
        assert yaml.safe_load(f.text) == f.obj
