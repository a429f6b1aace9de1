"""The rendered free-GPU query, evaluated by the pinned promtool on kube-state-metrics series.

What counts as used: GPU requests of pods bound to a real node and not finished. Virtual
nodes count neither as capacity nor as use; unbound pending pods and finished pods do not
hold GPUs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from generators import model
from tests.conftest import ROOT
from tools.toolchain import ToolNotInstalled, tool_path

from .conftest import one, overflow_envs

GPU = "nvidia_com_gpu"


def _pod(name: str, node: str, gpus: list[int], phase: str) -> list[dict[str, str]]:
    series = [{"series": f'kube_pod_container_resource_requests{{namespace="serving",pod="{name}",'
                         f'container="c{i}",node="{node}",resource="{GPU}",unit="integer"}}',
               "values": f"{count}x10"} for i, count in enumerate(gpus)]
    for each in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
        series.append({"series": f'kube_pod_status_phase{{namespace="serving",pod="{name}",phase="{each}"}}',
                       "values": f"{int(each == phase)}x10"})
    return series


def _capacity(virtual_nodes: list[str]) -> list[dict[str, str]]:
    nodes = {"gpu-1": 8, "gpu-2": 8, **dict.fromkeys(virtual_nodes, 64)}
    series = [{"series": f'kube_node_status_allocatable{{node="{node}",resource="{GPU}",unit="integer"}}',
               "values": f"{gpus}x10"} for node, gpus in nodes.items()]
    series.append({"series": 'kube_node_status_allocatable{node="gpu-1",resource="cpu",unit="core"}',
                   "values": "96x10"})
    return series


def _promtool_test(tmp_path: Path, query: str, groups: list[tuple[list[dict[str, str]], float]]) -> None:
    try:
        promtool = tool_path("promtool")
    except ToolNotInstalled as error:
        pytest.fail(f"{error} (make tools installs it)", pytrace=False)
    (tmp_path / "rules.yaml").write_text(json.dumps({"groups": [{"name": "overflow", "rules": [
        {"record": "trainyard:free_gpus", "expr": query}]}]}))
    tests = [{"interval": "1m", "input_series": series, "promql_expr_test": [
        {"expr": "trainyard:free_gpus", "eval_time": "5m",
         "exp_samples": [{"labels": "trainyard:free_gpus", "value": expected}]}]}
        for series, expected in groups]
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(
        {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}))
    done = subprocess.run([str(promtool), "test", "rules", "test.yaml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("env", overflow_envs())
def test_free_gpus_counts_only_bound_unfinished_pods_on_real_nodes(env: str, tmp_path: Path) -> None:
    ov = model.load(ROOT, env).overflow
    assert ov is not None
    policy = yaml.safe_load(one(env, "ConfigMap", "overflow-gate")["data"]["policy.yaml"])
    assert policy["spec"]["query"] == ov.gate.free_gpus_query
    virtual = list(ov.virtual_nodes)
    busy = (_capacity(virtual)
            + _pod("train-0", "gpu-1", [8], "Running")
            + _pod("serve-0", "gpu-2", [2, 1], "Running")      # two containers: 3 GPUs
            + _pod("starting-0", "gpu-2", [1], "Pending")     # bound, pulling its image: holds 1
            + _pod("done-0", "gpu-2", [4], "Succeeded")       # finished: holds nothing
            + _pod("waiting-0", "", [2], "Pending")           # not bound: holds nothing
            + _pod("spilled-0", virtual[0], [4], "Running"))  # on a provider: not in-cluster
    idle = _capacity(virtual)  # no GPU pods at all: the `or vector(0)` branch
    _promtool_test(tmp_path, ov.gate.free_gpus_query, [(busy, 16 - 8 - 3 - 1), (idle, 16)])
