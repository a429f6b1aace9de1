"""Derived overflow numbers: fill order, staggered gate bands, affinity weights, capacity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generators.model.load import load
from generators.model.overflow import Overflow, default_query, inference_pools
from generators.model.promql import Inventory
from generators.model.types import Pool, Role, Taint
from tests.support import ROOT
from tests.support.overflow_spec import BASE, SECOND_PROVIDER
from tests.support.scratch import repo_with

THIRD_PROVIDER = SECOND_PROVIDER.replace("name: dear", "name: deal").replace(
    "costPerGpuHourUsd: 3.5", "costPerGpuHourUsd: 9.0\n      preference: 1"
)


def _overflow(tmp_path: Path, text: str) -> Overflow:
    ov = load(repo_with(tmp_path, text), "bad").overflow
    assert ov is not None
    return ov


def _three(extra_gate: str = "") -> str:
    providers = SECOND_PROVIDER + THIRD_PROVIDER
    text = BASE.replace("  gate:\n", providers + "  gate:\n" + extra_gate, 1)
    return text.replace("openWhenFreeGpusBelow: 4", "openWhenFreeGpusBelow: 12")


def test_fill_order_is_preference_then_cost(tmp_path: Path) -> None:
    ov = _overflow(tmp_path, _three())
    # "deal" costs most but has a negotiated preference; then cheapest first.
    assert [p.name for p in ov.providers] == ["deal", "cheap", "dear"]
    assert [p.rank for p in ov.providers] == [0, 1, 2]
    assert [p.affinity_weight for p in ov.providers] == [50, 33, 16]


def test_default_stagger_spreads_the_open_threshold(tmp_path: Path) -> None:
    ov = _overflow(tmp_path, _three())
    bands = [p.band for p in ov.providers]
    assert [b.open_when_free_gpus_below for b in bands] == [12, 8, 4]  # step 12 // 3
    assert [b.close_when_free_gpus_at_least for b in bands] == [16, 12, 8]
    assert [b.open_after_seconds for b in bands] == [60, 180, 300]  # + staggerOpenSeconds 120
    assert {b.close_after_seconds for b in bands} == {600}
    assert all(b.close_when_free_gpus_at_least > b.open_when_free_gpus_below for b in bands)


def test_explicit_stagger(tmp_path: Path) -> None:
    ov = _overflow(tmp_path, _three("    staggerFreeGpus: 5\n    staggerOpenSeconds: 0\n"))
    assert [p.band.open_when_free_gpus_below for p in ov.providers] == [12, 7, 2]
    assert {p.band.open_after_seconds for p in ov.providers} == {60}


def test_single_provider_is_not_staggered(tmp_path: Path) -> None:
    ov = _overflow(tmp_path, BASE)
    [provider] = ov.providers
    assert (provider.band.open_when_free_gpus_below, provider.band.close_when_free_gpus_at_least) == (4, 16)
    assert provider.affinity_weight == 50 and provider.node_name == "vk-cheap"
    assert provider.max_usd_per_hour == pytest.approx(8 * 0.8)


def test_mock_capacity_is_keyed_by_node_and_carries_the_gpus(tmp_path: Path) -> None:
    provider = _overflow(tmp_path, BASE).providers[0]
    launch = provider.contract.launch(provider.contract_input)
    assert json.loads(launch.config_text) == {
        "vk-cheap": {"cpu": "8", "memory": "64Gi", "pods": "110", "others": {"nvidia.com/gpu": "8"}}
    }


def _pool(resource: str, role: Role = "inference", taints: tuple[Taint, ...] = ()) -> Pool:
    return Pool(
        name=resource.split(".")[0],
        role=role,
        gpu_model="m",
        gpu_resource=resource,
        gpus_per_node=8,
        nodes=1,
        reserve_nodes=0,
        per_node={},
        node_labels={"pool": resource},
        taints=taints,
        topology_levels=(),
    )


def _query(pools: tuple[Pool, ...], virtual_nodes: tuple[str, ...]) -> str:
    return default_query(Inventory(load(ROOT, "staging").monitoring, pools), virtual_nodes)


def test_default_query_covers_every_inference_gpu_resource_and_excludes_virtual_nodes() -> None:
    one = _query((_pool("nvidia.com/gpu"),), ("vk-a",))
    assert 'resource="nvidia_com_gpu"' in one and 'node!="vk-a"' in one
    two = _query((_pool("nvidia.com/gpu"), _pool("amd.com/gpu", role="shared")), ("vk-a", "vk-b"))
    assert 'resource=~"amd_com_gpu|nvidia_com_gpu"' in two and 'node!~"vk-a|vk-b"' in two
    assert "or vector(" not in two  # absence must stay absence


def test_only_pools_inference_can_use_count() -> None:
    # The usual GPU taint of managed pools. A pool's declared taint is what
    # its pods tolerate, so the pool counts and its key is tolerated by the query.
    usual = Taint("nvidia.com/gpu", "present", "NoSchedule")
    pools = (
        _pool("train.example/gpu", role="training"),  # training: never
        _pool("tainted.example/gpu", taints=(usual,)),  # declared: its pods tolerate it
        _pool("soft.example/gpu", taints=(Taint("k", None, "PreferNoSchedule"),)),  # steers only
        _pool("shared.example/gpu", role="shared"),
    )
    assert [p.name for p in inference_pools(pools)] == ["tainted", "soft", "shared"]
    query = _query(pools, ("vk-a",))
    for label in ("tainted", "soft", "shared"):
        assert f'label_pool="{label}.example/gpu"' in query
    assert "train.example" not in query
    assert 'key!="nvidia.com/gpu"' in query  # tolerated, so a node with it still counts
    assert 'key!="k"' not in query  # PreferNoSchedule never blocks, so it is not a matcher
    with pytest.raises(ValueError, match="no pool inference can use"):
        _query(pools[:1], ("vk-a",))


def test_a_provider_without_a_price_fills_first(tmp_path: Path) -> None:
    """An HPC allocation has no price: `costPerGpuHourUsd: 0` is accepted (it was refused by
    the schema's exclusiveMinimum) and, at equal preference, fills before every paid one."""
    free = SECOND_PROVIDER.replace("name: dear", "name: hpc").replace(
        "costPerGpuHourUsd: 3.5", "costPerGpuHourUsd: 0"
    )
    ov = _overflow(tmp_path, BASE.replace("  gate:\n", SECOND_PROVIDER + free + "  gate:\n", 1))
    first = ov.providers[0]
    assert (first.name, first.cost_per_gpu_hour_usd) == ("hpc", 0.0)
