"""`generate.py box up prod --scale 8`: production's layout at 1/8 of its nodes, on 2 cores.

The expected shape is the spec's (256 + 256 H100 and 64 L40S nodes in environments/prod.yaml,
divided by 8); what is asserted is what the real controllers report: KWOK's Ready nodes,
Kueue's Active queues and the quota it holds for the scaled fleet.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from generators.box.kube import is_true
from tests.box.test_box_up import BOX_TOOLS, run_cli
from tests.controlplane.fixtures import require_tools
from tests.support import ROOT
from tools.toolchain import tool_path

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]


def test_prod_at_one_eighth_comes_up_and_down(tmp_path: Path) -> None:
    require_tools(*BOX_TOOLS)
    done = run_cli("box", "up", "prod", "--scale", "8", box_dir=tmp_path)
    try:
        assert done.returncode == 0, done.stderr[-6000:]
        kubeconfig = done.stdout.strip().splitlines()[-1]

        def get(*args: str) -> list[Any]:
            argv = [str(tool_path("kubectl")), f"--kubeconfig={kubeconfig}", "get", *args, "-o", "yaml"]
            out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60)
            items: list[Any] = yaml.safe_load(out.stdout)["items"]
            return items

        nodes = get("nodes", "-l", "trainyard.dev/box-node=true,trainyard.dev/pool")
        pools: dict[str, int] = {}
        for node in nodes:
            assert is_true(node, "Ready")
            pool = node["metadata"]["labels"]["trainyard.dev/pool"]
            pools[pool] = pools.get(pool, 0) + 1
        assert pools == {"train-h100-a": 32, "train-h100-b": 32, "infer-l40s": 8}
        queues = get("clusterqueues")
        # the same queues as rendered/prod (scaling changes sizes, not the set of queues)
        folder = ROOT / "rendered" / "prod" / "kueue"
        rendered = sorted(p.stem.removeprefix("clusterqueue-") for p in folder.glob("clusterqueue-*.yaml"))
        assert sorted(q["metadata"]["name"] for q in queues) == rendered
        assert all(is_true(q, "Active") for q in queues)
        flavors = {f["metadata"]["name"]: f for f in get("resourceflavors")}
        assert flavors["train-h100-a"]["metadata"]["annotations"]["trainyard.dev/nodes"] == "32"
    finally:
        down = run_cli("box", "down", "prod", box_dir=tmp_path, timeout=300)
    assert down.returncode == 0, down.stderr
    assert not (tmp_path / "prod").exists()
