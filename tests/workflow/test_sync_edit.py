"""`generate.py sync-inventory` editing the environment file in place, on a scratch checkout:
the exact bytes after two counts of different widths change at once, the file's permissions
kept, and an edit that would leave the environment invalid refused with nothing written.

Spec (written here): pool `serve` (`nodes: 16`) above pool `train` (`nodes: 8`), each node
8 GPUs. Every expected file is typed out: only the digits between `nodes:` and the comment
move.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from tests.oracles.spec import environment, oracle_spec
from tests.support.scratch import run_cli

POOLS = """\
pools:
  - name: serve
    role: inference
    gpu: {{model: L40S, perNode: 8}}
    nodes: {serve}   # synced
    cpu: 96
    memory: 500Gi
    nodeLabels: {{pool: serve}}
  - name: train
    role: training
    gpu: {{model: H100, perNode: 8}}
    nodes: {train}   # synced
    reserveNodes: {reserve}
    cpu: 96
    memory: 1000Gi
    nodeLabels: {{pool: train}}
teams:
  - name: alpha
    namespaces: [alpha]
    shares: {{train: 100, serve: 100}}
"""


def spec(serve: int, train: int, reserve: int = 1) -> str:
    return oracle_spec(POOLS.format(serve=serve, train=train, reserve=reserve))


def node(name: str, pool: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"pool": pool}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "96", "memory": "500Gi", "nvidia.com/gpu": "8"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def scratch(tmp_path: Path, text: str, serve: int, train: int) -> tuple[Path, Path]:
    """environments/oracle.yaml = text (checked valid) and a node list of serve+train nodes."""
    environment(tmp_path, text)
    items = [node(f"s{i}", "serve") for i in range(serve)] + [node(f"t{i}", "train") for i in range(train)]
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), encoding="utf-8")
    return tmp_path / "environments" / "oracle.yaml", nodes


def test_two_counts_of_different_widths_change_in_one_edit(tmp_path: Path) -> None:
    # serve 16 -> 9 (two digits to one, 44 % lost: allowed by --max-drop-fraction 0.5),
    # train 8 -> 12 (one digit to two): every later offset moves, in both directions
    env_file, nodes = scratch(tmp_path, spec(16, 8), serve=9, train=12)
    code, out, err = run_cli(
        tmp_path, "sync-inventory", "oracle", "--nodes", str(nodes), "--max-drop-fraction", "0.5"
    )
    assert code == 0, err
    assert "serve: 16 -> 9 nodes" in out and "train: 8 -> 12 nodes" in out, out
    assert env_file.read_text(encoding="utf-8") == spec(9, 12)


def test_the_file_keeps_its_permissions(tmp_path: Path) -> None:
    env_file, nodes = scratch(tmp_path, spec(16, 8), serve=16, train=7)
    env_file.chmod(0o664)  # group-writable, as a shared checkout has it
    code, _, err = run_cli(tmp_path, "sync-inventory", "oracle", "--nodes", str(nodes))
    assert code == 0, err
    assert env_file.read_text(encoding="utf-8") == spec(16, 7)
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o664


def test_an_edit_that_leaves_the_environment_invalid_writes_nothing(tmp_path: Path) -> None:
    # train: 8 -> 6 nodes (25 %: within the default limit) but reserveNodes is 6, which would
    # leave no capacity: the edited file does not validate, so it is refused as a whole
    env_file, nodes = scratch(tmp_path, spec(16, 8, reserve=6), serve=16, train=6)
    before = env_file.read_bytes()
    code, _, err = run_cli(tmp_path, "sync-inventory", "oracle", "--nodes", str(nodes))
    assert code == 1
    assert err.splitlines() == [
        "environments/oracle.yaml:17:19: error: reserve of 6 nodes leaves no capacity in a pool "
        "of 6 (pools[1].reserveNodes); reserveNodes must be below nodes",
        "refused: nothing written (1 problem(s))",
    ]
    assert env_file.read_bytes() == before
