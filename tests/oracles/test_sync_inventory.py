"""sync-inventory on a small spec and a node list written here: which nodes count, the exact
bytes of the edited file, and the refusal of a mass drop.

Pool `train` (nodeLabels pool=train, 8 GPUs per node) is written with `nodes: 8`. The list
has 8 of its nodes: 5 Ready and clean, 1 NotReady, 1 cordoned, 1 quarantined by the health
controller (trainyard.dev/gpu-health=xid:NoSchedule), plus a control-plane node and a
virtual node that never count. So 5 count: a drop of 3 of 8 = 37.5 %, refused under the
default 25 % and accepted with --max-drop-fraction 0.5.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.oracles.spec import environment, oracle_spec
from tests.support.scratch import run_cli

SPEC = oracle_spec("""\
pools:
  - name: train
    role: training
    gpu: {model: H100, perNode: 8}
    nodes: 8   # synced
    cpu: 96
    memory: 1000Gi
    nodeLabels: {pool: train}
teams:
  - name: alpha
    namespaces: [alpha]
    shares: {train: 100}
""")


def node(
    name: str,
    labels: dict[str, str],
    *,
    ready: bool = True,
    cordoned: bool = False,
    taints: list[dict[str, str]] | None = None,
    gpus: int = 8,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"unschedulable": True} if cordoned else {}
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "allocatable": {"cpu": "96", "memory": "1000Gi", "nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


NODES = [
    *(node(f"t{i}", {"pool": "train"}) for i in range(5)),
    node("t5", {"pool": "train"}, ready=False),
    node("t6", {"pool": "train"}, cordoned=True),
    node(
        "t7",
        {"pool": "train"},
        taints=[{"key": "trainyard.dev/gpu-health", "value": "xid", "effect": "NoSchedule"}],
    ),
    node("cp", {"node-role.kubernetes.io/control-plane": ""}, gpus=0),
    node("vk-x", {"type": "virtual-kubelet"}, gpus=64),
]


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    environment(tmp_path, SPEC)  # the file, checked valid
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": NODES}), encoding="utf-8")
    return tmp_path / "environments" / "oracle.yaml", nodes


def test_counts_only_ready_schedulable_unquarantined_nodes(tmp_path: Path) -> None:
    spec, nodes = _repo(tmp_path)
    code, out, err = run_cli(
        tmp_path, "sync-inventory", "oracle", "--nodes", str(nodes), "--max-drop-fraction", "0.5"
    )
    assert code == 0, out + err
    assert spec.read_text(encoding="utf-8") == SPEC.replace("nodes: 8   # synced", "nodes: 5   # synced")
    for reason in ("NotReady", "cordoned", "quarantined (xid)"):
        assert reason in out + err, (reason, out + err)


def test_a_drop_over_the_limit_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    spec, nodes = _repo(tmp_path)
    code, out, err = run_cli(tmp_path, "sync-inventory", "oracle", "--nodes", str(nodes))
    assert code == 1, out + err
    assert spec.read_text(encoding="utf-8") == SPEC
    assert "38%" in out + err or "37.5%" in out + err, out + err  # 3 of 8 nodes
