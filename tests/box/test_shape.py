"""What `box up` builds before any process starts: the scaled spec and the KWOK nodes.

Expected values are the spec's numbers (environments/*.yaml) and the placement rule of
box/nodes.py (racks of 4 hosts, 2 racks per IB block), written here as literals.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from box.nodes import BOX_LABEL, KWOK_ANNOTATION, environment_nodes
from box.scale import ScaleError, scaled_checkout
from box.state import BOX_DIR_ENV
from generators.model.load import load
from generators.pipeline.render import objects, render_tree
from tests.support import ROOT

GPU = "nvidia.com/gpu"


def test_prod_scaled_by_8_divides_nodes_and_quotas_follow(tmp_path: Path) -> None:
    env = load(scaled_checkout(ROOT, "prod", 8, tmp_path / "copy"), "prod")
    # prod: 256 + 256 H100 nodes (8 reserve each), 64 L40S (2 reserve); rounded up.
    assert {p.name: (p.nodes, p.reserve_nodes) for p in env.pools} == {
        "train-h100-a": (32, 1),
        "train-h100-b": (32, 1),
        "infer-l40s": (8, 1),
    }
    rendered = objects(render_tree(env))
    flavors = {o["metadata"]["name"]: o for o in rendered if o["kind"] == "ResourceFlavor"}
    assert flavors["train-h100-a"]["metadata"]["annotations"]["trainyard.dev/nodes"] == "32"
    # Quota follows the smaller fleet: all teams' nominal GPUs of train-h100-a never exceed
    # the 31 schedulable nodes x 8 GPUs of the scaled pool.
    nominal = 0
    for queue in (o for o in rendered if o["kind"] == "ClusterQueue"):
        for group in queue["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                if flavor["name"] == "train-h100-a":
                    nominal += sum(int(r["nominalQuota"]) for r in flavor["resources"] if r["name"] == GPU)
    assert 0 < nominal <= 31 * 8


def test_scale_leaves_the_checkout_alone(tmp_path: Path) -> None:
    before = (ROOT / "environments" / "prod.yaml").read_bytes()
    scaled_checkout(ROOT, "prod", 8, tmp_path / "copy")
    assert (ROOT / "environments" / "prod.yaml").read_bytes() == before
    assert (tmp_path / "copy" / "environments" / "prod.yaml").read_bytes() != before


def test_scale_refuses_zero(tmp_path: Path) -> None:
    with pytest.raises(ScaleError, match="positive"):
        scaled_checkout(ROOT, "prod", 0, tmp_path / "copy")


def test_staging_nodes_carry_pool_labels_taints_topology_and_capacity() -> None:
    nodes = environment_nodes(load(ROOT, "staging"))
    assert len(nodes) == 32 + 8  # staging: 32 H100 + 8 L40S
    by_name = {node["metadata"]["name"]: (node, capacity) for node, capacity in nodes}
    node, capacity = by_name["train-h100-005"]
    labels = node["metadata"]["labels"]
    assert labels["trainyard.dev/pool"] == "train-h100"
    assert labels["topology.trainyard.dev/rack"] == "rack-1"  # hosts 4..7
    assert labels["kubernetes.io/hostname"] == "train-h100-005"
    assert labels[BOX_LABEL] == "true"
    assert node["metadata"]["annotations"][KWOK_ANNOTATION] == "fake"
    training_taint = {"key": "trainyard.dev/training", "value": "true", "effect": "NoSchedule"}
    assert node["spec"]["taints"] == [training_taint]
    assert capacity[GPU] == "8" and capacity["rdma/ib"] == "8" and capacity["cpu"] == "208"
    assert capacity["memory"] == str(1800 * 2**30)
    l40s, l40s_capacity = by_name["infer-l40s-007"]
    assert l40s["spec"]["taints"] == [] and l40s_capacity["cpu"] == "120"
    assert "topology.trainyard.dev/rack" not in l40s["metadata"]["labels"]


def test_prod_scaled_nodes_have_blocks_of_two_racks(tmp_path: Path) -> None:
    env = load(scaled_checkout(ROOT, "prod", 8, tmp_path / "copy"), "prod")
    by_name = {node["metadata"]["name"]: node for node, _ in environment_nodes(env)}
    assert len(by_name) == 72
    labels = by_name["train-h100-b-009"]["metadata"]["labels"]
    assert labels["topology.trainyard.dev/rack"] == "rack-2"  # hosts 8..11
    assert labels["topology.trainyard.dev/ib-block"] == "ib-block-1"  # hosts 8..15


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, BOX_DIR_ENV: str(tmp_path / "box")}
    return subprocess.run(
        [sys.executable, str(ROOT / "generate.py"), "box", *args],
        env=env,
        text=True,
        capture_output=True,
        timeout=120,
        check=False,
    )


def test_cli_usage_and_no_box_are_one_line_errors(tmp_path: Path) -> None:
    unknown = _cli(tmp_path, "scene", "no-such-scene", "staging")
    assert unknown.returncode == 2 and "gang-placement" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    assert _cli(tmp_path, "down", "staging", "--scale", "8").returncode == 2
    missing = _cli(tmp_path, "kubeconfig", "staging")
    assert missing.returncode == 1 and missing.stderr.strip().splitlines() == [
        "generate.py box: error: no box is up for staging; run: generate.py box up staging"
    ]
    nothing = _cli(tmp_path, "down", "staging")
    assert nothing.returncode == 0 and "nothing (no box was up)" in nothing.stderr
