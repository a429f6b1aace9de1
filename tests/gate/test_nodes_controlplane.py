"""Taint add/remove against a REAL kube-apiserver (no fake API).

The apiserver comes from the `kubeconfig` fixture of the control-plane harness
(tests/controlplane/fixtures.py: etcd + kube-apiserver on loopback, shared by the session);
without that fixture these tests skip. They create Node objects with unique names and
labels, the way virtual-kubelet registers its node, and delete them afterwards.
"""

from __future__ import annotations

import threading
import time

import pytest
from trainyard_gate.overflow.controller import TaintEnforcer, run
from trainyard_gate.overflow.hysteresis import GateState, OnUnavailable
from trainyard_gate.overflow.metrics import GateMetrics
from trainyard_gate.overflow.policy import TaintPolicy
from trainyard_gate.runtime.nodes import KubeNodes, Want
from trainyard_gate.runtime.prometheus import PrometheusClient, QueryFailed
from trainyard_gate.runtime.reader import PrometheusEndpoint

from .conftest import METRIC, Exporter
from .fleet import TAINT, Fleet, patches

pytestmark = pytest.mark.controlplane


def test_close_and_open_touch_only_the_gate_taint(fleet: Fleet) -> None:
    names = [fleet.create(0), fleet.create(1)]
    before = {name: fleet.others(name) for name in names}
    metrics = GateMetrics([fleet.gate.name])
    enforcer = TaintEnforcer(KubeNodes(fleet.api), metrics, dry_run=False)
    assert enforcer.initial_states([fleet.gate]) == {fleet.gate.name: GateState.OPEN}

    assert enforcer.enforce(fleet.gate, GateState.CLOSED)
    for name in names:
        assert fleet.gated(name) and fleet.others(name) == before[name]
    assert patches(metrics, fleet.gate.name, "taint") == 2
    assert enforcer.initial_states([fleet.gate]) == {fleet.gate.name: GateState.CLOSED}

    versions = {name: fleet.version(name) for name in names}
    assert enforcer.enforce(fleet.gate, GateState.CLOSED)  # idempotent: no patch at all
    assert patches(metrics, fleet.gate.name, "taint") == 2
    assert versions == {n: fleet.version(n) for n in names}

    assert enforcer.enforce(fleet.gate, GateState.OPEN)
    for name in names:
        assert not fleet.gated(name) and fleet.others(name) == before[name]
    assert patches(metrics, fleet.gate.name, "untaint") == 2


def test_recreated_node_gets_the_taint_back(fleet: Fleet) -> None:
    name = fleet.create(0)
    enforcer = TaintEnforcer(KubeNodes(fleet.api), GateMetrics([fleet.gate.name]), False)
    enforcer.enforce(fleet.gate, GateState.CLOSED)
    fleet.delete(name)
    fleet.create(0)  # virtual-kubelet restarted and registered its node again
    assert not fleet.gated(name)
    enforcer.enforce(fleet.gate, GateState.CLOSED)
    assert fleet.gated(name)


def test_dry_run_changes_nothing(fleet: Fleet) -> None:
    name = fleet.create(0)
    version = fleet.version(name)
    metrics = GateMetrics([fleet.gate.name])
    enforcer = TaintEnforcer(KubeNodes(fleet.api), metrics, dry_run=True)
    enforcer.enforce(fleet.gate, GateState.CLOSED)
    enforcer.enforce(fleet.gate, GateState.CLOSED)
    assert fleet.version(name) == version
    assert patches(metrics, fleet.gate.name, "taint", dry_run=True) == 1  # reported once


def test_conflicting_writer_is_not_overwritten(fleet: Fleet) -> None:
    name = fleet.create(0)
    nodes = KubeNodes(fleet.api)
    [stale] = nodes.list(fleet.gate.label_selector)
    other = {"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}
    fleet.api.patch_node(  # someone else adds a taint after our read
        name,
        {"spec": {"taints": [*fleet.taints(name), other]}},
        _content_type="application/merge-patch+json",
    )
    assert nodes.apply(stale, Want(TAINT, present=True))  # 409, re-read, patched
    assert fleet.gated(name) and other in fleet.taints(name)


def test_once_pass_with_real_prometheus_and_apiserver(
    fleet: Fleet, exporter: Exporter, request: pytest.FixtureRequest
) -> None:
    # Looked up here, not as a parameter: a session-scoped fixture would start Prometheus
    # before `fleet` gets the chance to skip.
    prometheus_url: str = request.getfixturevalue("prometheus_url")
    name = fleet.create(0)
    policy = TaintPolicy(
        name="overflow-gate",
        prometheus=PrometheusEndpoint(prometheus_url, 2),
        query=METRIC,
        reconcile_interval_seconds=1,
        on_prometheus_unavailable=OnUnavailable.HOLD,
        dry_run=False,
        gates=(fleet.gate,),  # hold times 0: one observation decides
    )
    exporter.set(100)
    prometheus = PrometheusClient(policy.prometheus)
    deadline = time.monotonic() + 10
    while not _shows(prometheus, 100.0):
        assert time.monotonic() < deadline, "Prometheus never scraped the exporter"
        time.sleep(0.1)
    metrics = GateMetrics([fleet.gate.name])
    enforcer = TaintEnforcer(KubeNodes(fleet.api), metrics, dry_run=False)
    code = run(policy, prometheus, enforcer, metrics, threading.Event(), once=True, node_resync_seconds=0)
    prometheus.close()
    assert code == 0 and fleet.gated(name)


def _shows(prometheus: PrometheusClient, value: float) -> bool:
    try:
        return prometheus.query_single(METRIC) == value
    except QueryFailed:
        return False
