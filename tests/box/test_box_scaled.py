"""`generate.py box up prod --scale 8 --argocd`: production's layout at 1/8 of its nodes, on 2
cores, deployed by the real Argo CD v3.5.1, then `box scene first-sync prod`.

The expected shape is the spec's (256 + 256 H100 and 64 L40S nodes in environments/prod.yaml,
divided by 8); what is asserted is what the real controllers report: KWOK's Ready nodes,
Kueue's Active queues and the quota it holds for the scaled fleet, and Argo CD's own report of
prod's first sync (Synced and Healthy, every wave rendered/prod/ carries applied in order, no
failed operation, no retry), the staging box's first-sync checks (tests/support/argocd.py).
One box for both: Argo CD's bring-up costs about 60 s more than the box's own applier's, and
a second prod box would cost its whole bring-up again.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from box.kube import is_true
from tests.support import ROOT
from tests.support.argocd import first_sync_held, rendered_waves
from tests.support.box import box_up, run_scene
from tools.toolchain import tool_path

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

SCENE_SECONDS = 600


def test_prod_at_one_eighth_comes_up_through_argo_cd_and_down(tmp_path: Path) -> None:
    with box_up(tmp_path, "prod", scale=8, argocd=True) as box:
        first_sync_held(
            run_scene(box, "first-sync", SCENE_SECONDS), "argocd/trainyard-prod", rendered_waves("prod")
        )

        def get(*args: str) -> list[Any]:
            argv = [str(tool_path("kubectl")), f"--kubeconfig={box.kubeconfig}", "get", *args, "-o", "yaml"]
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
    assert not (tmp_path / "prod").exists()  # box_up's `box down` succeeded and removed it
