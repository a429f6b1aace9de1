"""The rendered free-GPU query, evaluated by the pinned promtool on kube-state-metrics series.

What counts as used: GPU requests of pods bound to a node of an inference pool and not
finished. Virtual nodes count neither as capacity nor as use; unbound pending pods and
finished pods do not hold GPUs. (Which nodes count at all, and what missing inputs give,
is shown at prod's shape on a real Prometheus: tests/gate/test_rendered_query_live.py.)
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from generators.model.load import load
from generators.model.overflow import inference_pools
from generators.model.types import Pool
from generators.promql.vocabulary import ksm_label
from tests.support import ROOT, tool

from .conftest import one, overflow_envs

GPU = "nvidia_com_gpu"
KSM = 'job="kube-state-metrics"'  # the shipped environments' selector (asserted below)


def _pod(name: str, node: str, gpus: list[int], phase: str) -> list[dict[str, str]]:
    series = [
        {
            "series": f'kube_pod_container_resource_requests{{{KSM},namespace="serving",pod="{name}",'
            f'container="c{i}",node="{node}",resource="{GPU}",unit="integer"}}',
            "values": f"{count}x10",
        }
        for i, count in enumerate(gpus)
    ]
    for each in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
        series.append(
            {
                "series": f'kube_pod_status_phase{{{KSM},namespace="serving",pod="{name}",phase="{each}"}}',
                "values": f"{int(each == phase)}x10",
            }
        )
    return series


def _node(node: str, labels: dict[str, str], gpus: int) -> list[dict[str, str]]:
    """A Ready, schedulable node as kube-state-metrics exports it."""
    label_text = "".join(f',{ksm_label(k)}="{v}"' for k, v in labels.items())
    return [
        {"series": f'kube_node_labels{{{KSM},node="{node}"{label_text}}}', "values": "1x10"},
        {
            "series": f'kube_node_status_allocatable{{{KSM},node="{node}",resource="{GPU}",unit="integer"}}',
            "values": f"{gpus}x10",
        },
        {
            "series": f'kube_node_status_condition{{{KSM},node="{node}",condition="Ready",status="true"}}',
            "values": "1x10",
        },
        {"series": f'kube_node_spec_unschedulable{{{KSM},node="{node}"}}', "values": "0x10"},
    ]


def _capacity(pool: Pool, virtual_nodes: list[str]) -> list[dict[str, str]]:
    """Two 8-GPU nodes of `pool`, idle virtual nodes, a CPU series that must not count."""
    series = [*_node("gpu-1", dict(pool.node_labels), 8), *_node("gpu-2", dict(pool.node_labels), 8)]
    for node in virtual_nodes:  # even labelled like the pool, a virtual node never counts
        series += _node(node, dict(pool.node_labels), 64)
    series.append(
        {
            "series": f'kube_node_status_allocatable{{{KSM},node="gpu-1",resource="cpu",unit="core"}}',
            "values": "96x10",
        }
    )
    series.append({"series": f'up{{{KSM},instance="ksm:8080"}}', "values": "1x10"})
    return series


def _promtool_test(tmp_path: Path, query: str, groups: list[tuple[list[dict[str, str]], float]]) -> None:
    promtool = tool("promtool")
    (tmp_path / "rules.yaml").write_text(
        json.dumps(
            {"groups": [{"name": "overflow", "rules": [{"record": "trainyard:free_gpus", "expr": query}]}]}
        )
    )
    tests = [
        {
            "interval": "1m",
            "input_series": series,
            "promql_expr_test": [
                {
                    "expr": "trainyard:free_gpus",
                    "eval_time": "5m",
                    "exp_samples": [{"labels": "trainyard:free_gpus", "value": expected}],
                }
            ],
        }
        for series, expected in groups
    ]
    (tmp_path / "test.yaml").write_text(
        yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests})
    )
    done = subprocess.run(
        [str(promtool), "test", "rules", "test.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("env", overflow_envs())
def test_free_gpus_counts_only_bound_unfinished_pods_on_real_nodes(env: str, tmp_path: Path) -> None:
    environment = load(ROOT, env)
    ov = environment.overflow
    assert ov is not None and environment.monitoring.selectors.kube_state_metrics == KSM
    policy = yaml.safe_load(one(env, "ConfigMap", "overflow-gate-policy")["data"]["policy.yaml"])
    assert policy["spec"]["query"] == ov.gate.free_gpus_query
    pool = inference_pools(environment.pools)[0]
    virtual = list(ov.virtual_nodes)
    busy = (
        _capacity(pool, virtual)
        + _pod("serve-0", "gpu-1", [8], "Running")
        + _pod("serve-1", "gpu-2", [2, 1], "Running")  # two containers: 3 GPUs
        + _pod("starting-0", "gpu-2", [1], "Pending")  # bound, pulling its image: holds 1
        + _pod("done-0", "gpu-2", [4], "Succeeded")  # finished: holds nothing
        + _pod("waiting-0", "", [2], "Pending")  # not bound: holds nothing
        + _pod("spilled-0", virtual[0], [4], "Running")
    )  # on a provider: not in-cluster
    idle = _capacity(pool, virtual) + _pod("done-1", "gpu-1", [8], "Succeeded")  # no live GPU pod
    _promtool_test(tmp_path, ov.gate.free_gpus_query, [(busy, 16 - 8 - 3 - 1), (idle, 16)])


def _allocatable(series: list[dict[str, str]], node: str, gpus: int) -> list[dict[str, str]]:
    """`series` with `node`'s allocatable GPUs set to `gpus` (the device plugin reports fewer
    when GPUs fail; pods already bound keep running on them)."""
    prefix = f'kube_node_status_allocatable{{{KSM},node="{node}",resource="{GPU}"'
    return [{**s, "values": f"{gpus}x10"} if s["series"].startswith(prefix) else s for s in series]


@pytest.mark.parametrize("env", overflow_envs())
def test_an_over_committed_node_adds_nothing_and_takes_nothing(env: str, tmp_path: Path) -> None:
    """A node whose bound pods request more GPUs than it has allocatable adds 0 free GPUs,
    never a negative number that would eat the free GPUs of the other nodes (and open the
    gate early, or keep it open while GPUs are free elsewhere).

    gpu-1: allocatable 6 (two GPUs failed), serve-0 requests 8: free max(6 - 8, 0) = 0, not -2.
    gpu-2: allocatable 8, serve-1 requests 3: free 5. Sum: 5 (unclamped it would be 3).
    Both nodes over-committed (gpu-2 also at 2 of 3 requested): 0, not -3."""
    environment = load(ROOT, env)
    ov = environment.overflow
    assert ov is not None
    pool = inference_pools(environment.pools)[0]
    virtual = list(ov.virtual_nodes)
    one_over = _allocatable(_capacity(pool, virtual), "gpu-1", 6) + (
        _pod("serve-0", "gpu-1", [8], "Running") + _pod("serve-1", "gpu-2", [3], "Running")
    )
    both_over = _allocatable(_allocatable(_capacity(pool, virtual), "gpu-1", 6), "gpu-2", 2) + (
        _pod("serve-0", "gpu-1", [8], "Running") + _pod("serve-1", "gpu-2", [3], "Running")
    )
    _promtool_test(tmp_path, ov.gate.free_gpus_query, [(one_over, 5), (both_over, 0)])


@pytest.mark.parametrize("env", overflow_envs())
def test_two_kube_state_metrics_replicas_count_once(env: str, tmp_path: Path) -> None:
    """Every series exported twice (two kube-state-metrics replicas, told apart by
    `instance`): the same 16 - 8 - 3 = 5 free GPUs as from one replica, not 16 - 22."""
    environment = load(ROOT, env)
    ov = environment.overflow
    assert ov is not None
    pool = inference_pools(environment.pools)[0]
    one = (
        _capacity(pool, list(ov.virtual_nodes))
        + _pod("serve-0", "gpu-1", [8], "Running")
        + _pod("serve-1", "gpu-2", [2, 1], "Running")
    )
    twice = [
        {**s, "series": s["series"].replace(f"{{{KSM}", f'{{{KSM},instance="{replica}"', 1)}
        for replica in ("ksm-a:8080", "ksm-b:8080")
        for s in one
        if not s["series"].startswith("up{")
    ] + [s for s in one if s["series"].startswith("up{")]
    _promtool_test(tmp_path, ov.gate.free_gpus_query, [(one, 5), (twice, 5)])


def _ended_at(series: list[dict[str, str]], pod: str, minutes: int) -> list[dict[str, str]]:
    """`series` with `pod`'s samples ending after `minutes` + 1 samples and no staleness
    marker after them: what a Prometheus restarted after the pod was deleted keeps (its new
    scrape loops never saw the series, so nothing marks it stale)."""
    return [
        {**s, "values": f"{s['values'].split('x')[0]}x{minutes}"} if f'pod="{pod}"' in s["series"] else s
        for s in series
    ]


@pytest.mark.parametrize("env", overflow_envs())
def test_a_pod_whose_series_stopped_holds_nothing_after_the_freshness_window(
    env: str, tmp_path: Path
) -> None:
    """The gang's pods deleted while Prometheus was down: their last samples (minute 1) are
    4 minutes old at minute 5, inside the default 5-minute lookback, yet the pods are gone
    (kube-state-metrics, scraped at every minute since, no longer exports them). Counted,
    they kept the gate open 4 min 46 s longer on the box (docs/overflow.md)."""
    environment = load(ROOT, env)
    ov = environment.overflow
    assert ov is not None
    pool = inference_pools(environment.pools)[0]
    virtual = list(ov.virtual_nodes)
    gone = _ended_at(_capacity(pool, virtual) + _pod("gang-0", "gpu-1", [8], "Running"), "gang-0", 1)
    live = _capacity(pool, virtual) + _pod("serve-0", "gpu-1", [8], "Running")
    _promtool_test(tmp_path, ov.gate.free_gpus_query, [(gone, 16), (live, 8)])
