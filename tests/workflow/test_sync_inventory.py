"""`generate.py sync-inventory`: only the numbers change, byte for byte elsewhere; unsafe
inventories are refused and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from generators.model.load import load
from generators.spec.load import load_document
from tests.support.inventory import inventory, node, pool_nodes
from tests.workflow.conftest import edit, generate

TRAINING_TAINT = {"key": "trainyard.dev/training", "value": "true", "effect": "NoSchedule"}


def write_nodes(root: Path, items: list[dict[str, Any]]) -> Path:
    path = root / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), encoding="utf-8")
    return path


def substituted(root: Path, env: str, pool_index: int, new: int) -> str:
    """The environment file with one pool's `nodes` number replaced at the position our own
    loader reports (not ruamel's): the expected bytes."""
    where = load_document(root, env).locate(("pools", pool_index, "nodes"))
    path = root / where.file
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    line = lines[where.line - 1]
    start = where.col - 1
    end = start + len(line[start:]) - len(line[start:].lstrip("0123456789"))
    lines[where.line - 1] = line[:start] + str(new) + line[end:]
    return "".join(lines)


def test_counts_out_not_ready_cordoned_tainted_and_degraded(repo: Path) -> None:
    env = load(repo, "prod")
    pool = env.pools[0]
    items = inventory(env, {pool.name: pool.nodes - 8})  # 8 nodes gone from the cluster
    broken = pool_nodes(pool, 5, prefix="broken-")
    broken[0]["status"]["conditions"][1]["status"] = "False"  # NotReady
    broken[1]["spec"]["unschedulable"] = True  # cordoned
    broken[2]["spec"]["taints"].append({"key": "nvidia.com/gpu-xid", "effect": "NoExecute"})
    broken[3]["status"]["allocatable"]["nvidia.com/gpu"] = "7"  # a GPU fell off the bus
    broken[4]["spec"]["taints"].append(  # quarantined by the health controller
        {"key": "trainyard.dev/gpu-health", "value": "gpu-temperature", "effect": "NoSchedule"}
    )
    path = write_nodes(repo, items + broken)
    expected = substituted(repo, "prod", 0, pool.nodes - 8)
    before = (repo / "environments" / "prod.yaml").read_text(encoding="utf-8")

    dry = generate(repo, "sync-inventory", "prod", "--nodes", str(path), "--dry-run").stdout
    assert (repo / "environments" / "prod.yaml").read_text(encoding="utf-8") == before
    assert (
        f"{pool.name}: {pool.nodes} -> {pool.nodes - 8} nodes; {pool.nodes - 3} matched, 5 counted out" in dry
    )
    for reason in (
        "NotReady",
        "cordoned",
        "tainted nvidia.com/gpu-xid:NoExecute",
        "7 of 8 nvidia.com/gpu allocatable",
        "quarantined (gpu-temperature)",
    ):
        assert reason in dry

    out = generate(repo, "sync-inventory", "prod", "--nodes", str(path)).stdout
    assert (repo / "environments" / "prod.yaml").read_text(encoding="utf-8") == expected
    assert "wrote environments/prod.yaml" in out
    assert load(repo, "prod").pools[0].nodes == pool.nodes - 8
    generate(repo, "render", "prod")  # the quotas follow the new count
    assert load(repo, "prod").team_flavors != env.team_flavors


def test_matching_inventory_writes_nothing(repo: Path) -> None:
    env = load(repo, "prod")
    out = generate(repo, "sync-inventory", "prod", "--nodes", str(write_nodes(repo, inventory(env)))).stdout
    assert "node counts already match; nothing to write" in out


def test_several_pools_change_at_once_only_numbers_move(repo: Path) -> None:
    env = load(repo, "staging")
    new = {env.pools[0].name: env.pools[0].nodes + 5, env.pools[1].name: env.pools[1].nodes - 1}
    generate(repo, "sync-inventory", "staging", "--nodes", str(write_nodes(repo, inventory(env, new))))
    assert [p.nodes for p in load(repo, "staging").pools] == list(new.values())
    text = (repo / "environments" / "staging.yaml").read_text(encoding="utf-8")
    assert "# Staging: the production layout at 1/8 scale; syncs automatically." in text
    assert 'kubernetesVersion: "1.36.2"' in text and "gpu: {model: H100-SXM5-80GB, perNode: 8}" in text


def _refused(repo: Path, env: str, items: list[dict[str, Any]], *extra: str) -> str:
    before = {p: p.read_bytes() for p in (repo / "environments").iterdir()}
    done = generate(repo, "sync-inventory", env, "--nodes", str(write_nodes(repo, items)), *extra, check=1)
    assert {p: p.read_bytes() for p in (repo / "environments").iterdir()} == before
    assert "refused: nothing written" in done.stderr and "Traceback" not in done.stderr
    return done.stderr


def test_refuses_a_gpu_node_in_no_pool(repo: Path) -> None:
    env = load(repo, "prod")
    stray = node("stray-gpu-1", {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    err = _refused(repo, "prod", [*inventory(env), stray])
    assert "error: 1 GPU node matches no pool's nodeLabels (stray-gpu-1)" in err


def test_refuses_a_node_in_several_pools(repo: Path) -> None:
    staging = repo / "environments" / "staging.yaml"
    edit(staging, "nodeLabels: {trainyard.dev/pool: infer-l40s}", "nodeLabels: {trainyard.dev/rack: r1}")
    env = load(repo, "staging")
    items = inventory(env)
    items[0]["metadata"]["labels"]["trainyard.dev/rack"] = "r1"  # a training node also in infer-l40s
    err = _refused(repo, "staging", items)
    assert (
        "1 node match the nodeLabels of several pools (train-h100, infer-l40s): "
        f"{items[0]['metadata']['name']};" in err
    )


@pytest.mark.parametrize("lost_fraction", [0.30, 1.0])
def test_refuses_a_mass_drop(repo: Path, lost_fraction: float) -> None:
    env = load(repo, "prod")
    pool = env.pools[1]
    left = int(pool.nodes * (1 - lost_fraction))
    items = inventory(env, {pool.name: left})
    err = _refused(repo, "prod", items)
    where = load_document(repo, "prod").locate(("pools", 1, "nodes"))
    assert (
        f"{where}: error: pool {pool.name} would lose {pool.nodes - left} of {pool.nodes} nodes at once"
        in err
    )
    if lost_fraction < 0.5:
        generate(
            repo, "sync-inventory", "prod", "--nodes", str(repo / "nodes.json"), "--max-drop-fraction", "0.5"
        )
        assert load(repo, "prod").pools[1].nodes == left


def test_exactly_the_allowed_fraction_passes(repo: Path) -> None:
    env = load(repo, "prod")
    pool = env.pools[0]
    left = pool.nodes - pool.nodes // 4  # 256 -> 192: exactly 25%
    generate(
        repo, "sync-inventory", "prod", "--nodes", str(write_nodes(repo, inventory(env, {pool.name: left})))
    )
    assert load(repo, "prod").pools[0].nodes == left


def _lab(root: Path, base_pools_for: tuple[str, ...]) -> None:
    """Environments whose pools come from a base file `_lab.yaml`."""
    prod = (root / "environments" / "dev.yaml").read_text(encoding="utf-8")
    head, pools_and_rest = prod.split("pools:\n", 1)
    pools, rest = pools_and_rest.split("\ncohorts:", 1)
    (root / "environments" / "_lab.yaml").write_text(
        "extends: _defaults.yaml\n# pools shared by lab environments\npools:\n" + pools + "\n",
        encoding="utf-8",
    )
    for name in base_pools_for:
        body = head.replace("extends: _defaults.yaml", "extends: _lab.yaml").replace(
            "name: dev", f"name: {name}"
        )
        (root / "environments" / f"{name}.yaml").write_text(body + "cohorts:" + rest, encoding="utf-8")


def test_updates_pools_inherited_from_a_base_used_once(repo: Path) -> None:
    _lab(repo, ("lab1",))
    env = load(repo, "lab1")
    expected = substituted(repo, "lab1", 0, env.pools[0].nodes + 2)
    assert load_document(repo, "lab1").locate(("pools", 0, "nodes")).file == "environments/_lab.yaml"
    items = inventory(env, {env.pools[0].name: env.pools[0].nodes + 2})
    out = generate(repo, "sync-inventory", "lab1", "--nodes", str(write_nodes(repo, items))).stdout
    assert "wrote environments/_lab.yaml" in out
    assert (repo / "environments" / "_lab.yaml").read_text(encoding="utf-8") == expected


def test_refuses_pools_inherited_from_a_shared_base(repo: Path) -> None:
    _lab(repo, ("lab1", "lab2"))
    env = load(repo, "lab1")
    err = _refused(repo, "lab1", inventory(env, {env.pools[0].name: env.pools[0].nodes + 2}))
    assert "environments/_lab.yaml: error: the pools of lab1 are defined here, shared with lab2" in err


def test_bad_nodes_file(repo: Path) -> None:
    path = repo / "nodes.json"
    path.write_text("{not json", encoding="utf-8")
    done = generate(repo, "sync-inventory", "prod", "--nodes", str(path), check=1)
    assert done.stderr.startswith(f"{path}: error: not JSON")
    done = generate(repo, "sync-inventory", "prod", "--nodes", str(repo / "missing.json"), check=2)
    assert "cannot read" in done.stderr
    generate(repo, "sync-inventory", "nowhere", "--nodes", str(path), check=2)


def test_nodelist_of_another_cluster_is_one_cause_not_a_line_per_node(repo: Path) -> None:
    """Prod's 576 nodes synced against a cluster labelled otherwise once printed a
    line per node before the line that explained it."""
    env = load(repo, "prod")
    items = [n for p in env.pools for n in pool_nodes(p, p.nodes)]
    for item in items:
        item["metadata"]["labels"] = {
            "kubernetes.io/hostname": item["metadata"]["name"],
            "cloud.example/pool": "gpu",
        }
    err = _refused(repo, "prod", items)
    lines = err.splitlines()
    assert lines[0] == (
        "nodes.json: error: none of its 576 GPU nodes matches any pool of the environment: "
        "is it the NodeList of another cluster? (check kubectl's current context)"
    ).replace("nodes.json", str(repo / "nodes.json"))
    assert lines[1].endswith(
        "576 GPU nodes match no pool's nodeLabels (infer-l40s-0000, "
        "infer-l40s-0001, infer-l40s-0002, infer-l40s-0003, infer-l40s-0004, "
        "and 571 more); label them like their pool, or add the pool to the environment"
    )
    assert len(lines) <= 6, err  # the two above, a drop refusal per pool (3), the summary


USUAL_GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def test_a_pool_wide_undeclared_taint_is_named_instead_of_accepting_the_drop(repo: Path) -> None:
    """Managed GPU pools taint every node nvidia.com/gpu=present:NoSchedule.
    Undeclared, sync-inventory counts the whole pool out; the hint must not be
    --max-drop-fraction (that zeroes the pool's quota) but the missing declaration."""
    env = load(repo, "prod")
    index = next(i for i, p in enumerate(env.pools) if p.name == "infer-l40s")
    items = inventory(env)
    for item in items:
        if item["metadata"]["labels"].get("trainyard.dev/pool") == "infer-l40s":
            item["spec"]["taints"] = [USUAL_GPU_TAINT]
    err = _refused(repo, "prod", items)
    assert (
        "pool infer-l40s would lose 64 of 64 nodes at once, 100%, over the 25% allowed "
        f"(pools[{index}].nodes); every node carries the taint nvidia.com/gpu=present:NoSchedule: "
        f"declare it under pools[{index}].taints (its pods tolerate it), do not accept the drop"
    ) in err


def test_a_declared_usual_gpu_taint_is_counted_and_keeps_overflow_working(repo: Path) -> None:
    text = (repo / "environments" / "prod.yaml").read_text()
    old = "    nodeLabels: {trainyard.dev/pool: infer-l40s, nvidia.com/gpu.product: NVIDIA-L40S}\n"
    assert old in text
    (repo / "environments" / "prod.yaml").write_text(
        text.replace(
            old, old + "    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n", 1
        )
    )
    env = load(repo, "prod")  # the default free-GPU query no longer refuses the pool
    assert env.overflow is not None
    query = env.overflow.gate.free_gpus_query
    assert 'label_trainyard_dev_pool="infer-l40s"' in query and 'key!="nvidia.com/gpu"' in query
    items = inventory(env)  # pool_nodes() gives each node the pool's declared taints
    generate(repo, "sync-inventory", "prod", "--nodes", str(write_nodes(repo, items)))
    assert next(p for p in load(repo, "prod").pools if p.name == "infer-l40s").nodes == 64
