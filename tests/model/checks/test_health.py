"""The health cap in nodes a person can check.

`maxNodes: 500, maxPercentOfPool: 100` rendered with no finding although the docs say keep
the cap at or below the reserve; one percentage for all pools put small pools on a rounding
cliff (3 % of 36 nodes is 1, of 32 is 0). Now: per-pool caps in nodes, a floor of one node,
a warning above the pool's reserve (it still renders), an error above the pool. Expected
values are literals read off staging's spec: train-h100 (32 nodes, reserveNodes 1) is the
only pool the controller watches; staging ships `cap: {maxNodes: 1, maxPercentOfPool: 5}`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support import ROOT
from tests.support.scratch import repo_with, run_cli, tree_digest

SHIPPED = "  cap: {maxNodes: 1, maxPercentOfPool: 5}\n"


def _staging(cap_line: str) -> str:
    text = (ROOT / "environments" / "staging.yaml").read_text()
    assert SHIPPED in text, "the shipped cap these tests edit"
    return text.replace("name: staging", "name: bad", 1).replace(SHIPPED, cap_line, 1)


def _position(text: str, marker: str) -> str:
    offset = text.index(marker)
    return f"{text.count(chr(10), 0, offset) + 1}:{offset - text.rfind(chr(10), 0, offset)}"


def _refused(tmp_path: Path, cap_line: str, marker: str, message: str) -> None:
    text = _staging(cap_line)
    root = repo_with(tmp_path, text)
    before = tree_digest(root / "rendered")
    code, _, err = run_cli(root, "render", "bad")
    assert code == 1, err
    expected = f"environments/bad.yaml:{_position(text, marker)}: error: {message}"
    assert expected in err.splitlines(), err
    assert tree_digest(root / "rendered") == before


def test_a_fleet_cap_above_the_watched_pools_is_an_error(tmp_path: Path) -> None:
    _refused(
        tmp_path,
        "  cap: {maxNodes: 500, maxPercentOfPool: 100}\n",
        "500",
        "maxNodes 500 is above the 32 nodes of the watched pools (health.cap.maxNodes); the "
        "fleet-wide cap is a blast-radius limit: size it to what may break at once, at most the "
        "reserves together",
    )


def test_a_pool_cap_above_the_pool_is_an_error(tmp_path: Path) -> None:
    _refused(
        tmp_path,
        "  cap: {maxNodes: 1, maxPercentOfPool: 5, pools: {train-h100: 40}}\n",
        "40}",
        "cap of 40 nodes is above pool 'train-h100''s 32 nodes (health.cap.pools.train-h100); a cap "
        "can be at most the pool; keep it at or below its reserveNodes (1)",
    )


def test_a_cap_for_a_pool_not_watched_is_an_error(tmp_path: Path) -> None:
    _refused(
        tmp_path,
        "  cap: {maxNodes: 1, maxPercentOfPool: 5, pools: {train-h10: 1}}\n",
        "train-h10:",
        "pool 'train-h10' is not watched by the health controller (health.cap.pools.train-h10); "
        "did you mean 'train-h100'?",
    )


def test_a_cap_above_the_reserve_warns_and_renders(tmp_path: Path) -> None:
    text = _staging("  cap: {maxNodes: 1, maxPercentOfPool: 10}\n")  # 10 % of 32 = 3 > 1
    root = repo_with(tmp_path, text)
    code, _, err = run_cli(root, "render", "bad")
    assert code == 0, err
    assert (
        f"environments/bad.yaml:{_position(text, '10}')}: warning: pool 'train-h100' may have 3 nodes "
        "quarantined, above its reserveNodes (1) (health.cap.maxPercentOfPool); quota would then "
        "promise GPUs that are quarantined; raise pools[0].reserveNodes or lower the cap"
    ) in err.splitlines()


def test_the_shipped_cap_neither_warns_nor_fails(tmp_path: Path) -> None:
    root = repo_with(tmp_path, _staging(SHIPPED))
    code, _, err = run_cli(root, "render", "bad")
    assert code == 0 and "warning" not in err, err


def test_a_pool_cap_reaches_the_controllers_policy(tmp_path: Path) -> None:
    cap = "  cap: {maxNodes: 1, maxPercentOfPool: 5, pools: {train-h100: 1}}\n"
    root = repo_with(tmp_path, _staging(cap))
    code, _, err = run_cli(root, "render", "bad")
    assert code == 0, err
    configmap = root / "rendered" / "bad" / "health" / "trainyard-system" / "configmap-gpu-health-policy.yaml"
    policy = yaml.safe_load(yaml.safe_load(configmap.read_text())["data"]["policy.yaml"])
    assert policy["spec"]["pools"] == [
        {
            "name": "train-h100",
            "nodeSelector": {"matchLabels": {"trainyard.dev/pool": "train-h100"}},
            "maxNodes": 1,
        }
    ]
    assert policy["spec"]["cap"] == {"maxNodes": 1, "maxPercentOfPool": 5}


def test_a_small_pool_is_no_longer_refused_for_rounding_to_zero(tmp_path: Path) -> None:
    """10 % of 4 nodes rounded to 0 and was refused; with the floor of one it is one node."""
    from tests.support import CORPUS

    text = (
        (CORPUS / "bad" / "health-cap-above-the-pool.yaml").read_text().replace("  cap: {maxNodes: 5}\n", "")
    )
    root = repo_with(tmp_path, text)
    code, _, err = run_cli(root, "render", "bad")
    assert code == 0, err
    configmap = root / "rendered" / "bad" / "health" / "trainyard-system" / "configmap-gpu-health-policy.yaml"
    policy = yaml.safe_load(yaml.safe_load(configmap.read_text())["data"]["policy.yaml"])
    assert policy["spec"]["cap"] == {"maxNodes": 4, "maxPercentOfPool": 10}  # the schema defaults


# --- pools of other GPUs ----------------------------------------------------------------------
# The trial's cluster: H200 training nodes beside MI300X ones (amd.com/gpu). Every GPU health
# condition reads dcgm-exporter (NVIDIA only), so a MI300X pool the controller watches would
# never have its GPUs checked: refused where the spec puts it under watch.
AMD_SPEC = """\
extends: _defaults.yaml
name: bad
example: true
cluster: {kubernetesVersion: "1.36.2"}
pools:
  - {name: train-h200, role: training, gpu: {model: H200, perNode: 8}, nodes: 12, reserveNodes: 1,
     cpu: 192, memory: 2000Gi, nodeLabels: {trainyard.dev/pool: train-h200}}
  - {name: train-mi300x, role: training, gpu: {model: MI300X, perNode: 8, resource: amd.com/gpu},
     nodes: 8, reserveNodes: 1, cpu: 192, memory: 2000Gi, nodeLabels: {trainyard.dev/pool: train-mi300x}}
teams:
  - name: research
    namespaces: [research]
    shares: {train-h200: 100, train-mi300x: 100}
health:
  backend: trainyard
  image: {repository: ghcr.io/example/trainyard-gate, tag: 0.1.0}
  cap: {maxNodes: 1, maxPercentOfPool: 5}
"""


@pytest.mark.parametrize(
    ("health_pools", "code", "marker", "line"),
    [
        pytest.param(
            "[train-h200, train-mi300x]",
            1,
            "train-mi300x]",
            "error: pool 'train-mi300x' (amd.com/gpu) is listed in health.pools, but every GPU "
            "health condition reads dcgm-exporter, which sees NVIDIA GPUs only: its GPUs would never "
            "be checked (health.pools[1]); list only train-h200 under health.pools "
            "(docs/adopting.md, 'Pools of other GPUs')",
            id="listed_in_health_pools_is_refused",
        ),
        pytest.param(
            None,
            1,
            "amd.com/gpu",
            "error: pool 'train-mi300x' (amd.com/gpu) is watched by default (role training), but "
            "every GPU health condition reads dcgm-exporter, which sees NVIDIA GPUs only: its GPUs "
            "would never be checked (pools[1].gpu.resource); list only train-h200 under "
            "health.pools (docs/adopting.md, 'Pools of other GPUs')",
            id="watched_by_its_role_is_refused_at_its_resource",
        ),
        pytest.param(
            # Watching only the H200 pool renders; the MI300X pool gets the warning that no GPU
            # dashboard shows it (generators/model/checks/monitoring.py).
            "[train-h200]",
            0,
            "amd.com/gpu",
            "warning: pool 'train-mi300x' (amd.com/gpu) shows on no panel of the GPU hardware, "
            "utilization and training dashboards and in no GPU hardware alert: they read "
            "dcgm-exporter, which sees NVIDIA GPUs only (pools[1].gpu.resource); its quotas, "
            "placement, GPUMissing, KueueQuotaDrift and sync-inventory do count it "
            "(docs/adopting.md, 'Pools of other GPUs')",
            id="not_watched_renders_with_a_dashboard_warning",
        ),
    ],
)
def test_an_amd_pool(tmp_path: Path, health_pools: str | None, code: int, marker: str, line: str) -> None:
    text = AMD_SPEC if health_pools is None else AMD_SPEC + f"  pools: {health_pools}\n"
    root = repo_with(tmp_path, text)
    before = tree_digest(root / "rendered")
    returned, _, err = run_cli(root, "render", "bad")
    assert returned == code, err
    assert f"environments/bad.yaml:{_position(text, marker)}: {line}" in err.splitlines(), err
    if code:
        assert tree_digest(root / "rendered") == before
