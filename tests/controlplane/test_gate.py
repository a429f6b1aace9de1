"""The gate controller as a process (python -m trainyard_gate) against the test apiserver
and a real Prometheus: the rendered gate's taint appears and disappears with hysteresis.

The policy is the rendered TaintPolicy of an environment with overflow (thresholds, node
selector, taint and Prometheus-outage mode as shipped) with three test substitutions: the
test Prometheus URL, a query for the test exporter's series, and hold times of 2 s instead
of minutes. The band between the thresholds is checked by counting the controller's own
queries (its trainyard_gate_free_gpus / last-success metrics), never by sleeping.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from box.kube import Kube, wait_for
from box.manifests import REPO_ROOT, environment_objects
from tests.controlplane.harness import ControlPlane
from tests.controlplane.overflow_scene import Gate, gates, make_ready_node
from tests.gate.conftest import METRIC, Exporter, exporter, prometheus_url  # noqa: F401 (fixtures)
from tests.gate.program import GateProgram, gate_program

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

HOLD_SECONDS = 2
STEP_SECONDS = 60  # generous: a hold of 2 s plus a 1 s scrape and a 1 s reconcile
BAND_QUERIES = 5  # queries the controller must see inside the band without moving


def rendered_gate_policy(env_name: str) -> dict[str, Any]:
    objects = environment_objects(REPO_ROOT, env_name)
    [config_map] = [
        o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "overflow-gate-policy"
    ]
    policy: dict[str, Any] = yaml.safe_load(config_map["data"]["policy.yaml"])
    return policy


def gate_environment() -> str:
    for name in ("staging", "prod"):
        path = (
            REPO_ROOT
            / "rendered"
            / name
            / "overflow"
            / "trainyard-system"
            / "configmap-overflow-gate-policy.yaml"
        )
        if path.is_file():
            return name
    pytest.skip("no rendered overflow gate policy yet (overflow component)")


@pytest.fixture
def gate_setup(
    kube: Kube,
    control_plane: ControlPlane,
    prometheus_url: str,  # noqa: F811
    exporter: Exporter,  # noqa: F811
    tmp_path: Path,
) -> Iterator[tuple[GateProgram, Gate, dict[str, Any], str]]:
    env_name = gate_environment()
    policy = rendered_gate_policy(env_name)
    [gate] = gates(environment_objects(REPO_ROOT, env_name))[:1]
    spec = policy["spec"]
    spec["gates"] = [g for g in spec["gates"] if g["name"] == gate.name]
    spec["prometheus"]["url"] = prometheus_url
    spec["query"] = METRIC
    spec["reconcileIntervalSeconds"] = 1
    for entry in spec["gates"]:
        entry["closeAfterSeconds"] = HOLD_SECONDS
        entry["openAfterSeconds"] = HOLD_SECONDS
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text(yaml.safe_dump(policy), encoding="utf-8")

    node = f"vk-{gate.name}-gate-test"
    provider_taint = {"key": "virtual-kubelet.io/provider", "value": gate.name, "effect": "NoSchedule"}
    make_ready_node(
        kube, node, {**gate.match_labels, "kubernetes.io/hostname": node}, [provider_taint], gpus=8
    )
    # Start between the thresholds, so the gate's first move is decided by the test.
    exporter.set(float(spec["gates"][0]["openWhenFreeGpusBelow"]))
    process = gate_program(
        "trainyard-gate",
        policy_path,
        control_plane.kubeconfig,
        tmp_path / "gate.log",
        "--node-resync-seconds=1",
    )
    daemon = process.daemon
    daemon.start()
    try:
        daemon.wait_until(
            lambda: process.sample("trainyard_gate_closed", gate=gate.name) is not None, 60, "/metrics"
        )
        yield process, gate, spec["gates"][0], node
    finally:
        daemon.stop()
        kube.delete("v1", "Node", node)


def gated(kube: Kube, node: str, gate: Gate) -> bool:
    found = kube.get("v1", "Node", node)
    taints = ((found or {}).get("spec") or {}).get("taints") or []
    return any(
        t.get("key") == gate.taint["key"]
        and t.get("value") == gate.taint.get("value")
        and t.get("effect") == gate.taint["effect"]
        for t in taints
    )


def queries_seeing(process: GateProgram, value: float, count: int) -> None:
    """Wait until the controller has made `count` successful queries that returned `value`."""
    seen: set[float] = set()

    def enough() -> bool:
        if process.sample("trainyard_gate_free_gpus") == value:
            stamp = process.sample("trainyard_gate_last_successful_query_timestamp_seconds")
            if stamp is not None:
                seen.add(stamp)
        return len(seen) >= count

    wait_for(enough, STEP_SECONDS + count * 3, f"{count} queries returning {value}", interval=0.1)


def test_taint_follows_free_gpus_with_hysteresis(
    gate_setup: tuple[GateProgram, Gate, dict[str, Any], str],
    kube: Kube,
    exporter: Exporter,  # noqa: F811 (the fixture imported above)
) -> None:
    process, gate, thresholds, node = gate_setup
    close_at, open_below = thresholds["closeWhenFreeGpusAtLeast"], thresholds["openWhenFreeGpusBelow"]
    in_band = float(open_below)  # M <= free < N: neither condition holds
    assert open_below < close_at

    # Start-up: no node carries the taint, so the gate reads as open; in the band it stays so.
    queries_seeing(process, in_band, BAND_QUERIES)
    assert not gated(kube, node, gate)

    exporter.set(float(close_at))  # plenty free: close after the hold time
    wait_for(lambda: gated(kube, node, gate), STEP_SECONDS, "gate taint added")
    assert process.sample("trainyard_gate_closed", gate=gate.name) == 1

    exporter.set(in_band)  # back into the band: stays closed
    queries_seeing(process, in_band, BAND_QUERIES)
    assert gated(kube, node, gate)

    exporter.set(float(open_below - 1))  # scarce: open after the hold time
    wait_for(lambda: not gated(kube, node, gate), STEP_SECONDS, "gate taint removed")
    assert process.sample("trainyard_gate_closed", gate=gate.name) == 0

    exporter.set(float(close_at - 1))  # just under N: still the band, stays open
    queries_seeing(process, float(close_at - 1), BAND_QUERIES)
    assert not gated(kube, node, gate)
    found = kube.get("v1", "Node", node)
    assert found and any(t["key"] == "virtual-kubelet.io/provider" for t in found["spec"]["taints"])
    assert process.daemon.running(), process.daemon.log_tail()
