"""Node-side faults against the REAL kube-apiserver: each ends closed (nothing spills that
should not) and a metric shows it.

- restart in the middle of a transition (some nodes patched, some not);
- a wrong taint value on the gate's key;
- a selector that matches no node;
- a virtual node recreated while the gate was down (the rendered MutatingAdmissionPolicy);
- a virtual node registered before that policy took effect (closed by its first update);
- two gate processes at once: one Lease holder acts, the other stands by, and takes over.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from trainyard_gate.overflow.controller import TaintEnforcer
from trainyard_gate.overflow.hysteresis import GateState
from trainyard_gate.overflow.metrics import GateMetrics
from trainyard_gate.overflow.policy import Gate, parse
from trainyard_gate.runtime.nodes import KubeNodes

from box.kube import Kube, wait_for
from box.manifests import REPO_ROOT, environment_objects

from .conftest import METRIC, Exporter
from .fleet import TAINT, Fleet, patches
from .program import gate_program

pytestmark = pytest.mark.controlplane


def sample(metrics: GateMetrics, name: str, gate: str) -> float | None:
    return metrics.registry.get_sample_value(name, {"gate": gate})


def gate_taint(fleet: Fleet, node: str, value: str = "closed") -> None:
    taints = [*fleet.taints(node), {"key": TAINT.key, "value": value, "effect": "NoSchedule"}]
    fleet.api.patch_node(node, {"spec": {"taints": taints}}, _content_type="application/merge-patch+json")


def untaint(fleet: Fleet, node: str) -> None:
    taints = [t for t in fleet.taints(node) if t["key"] != TAINT.key]
    fleet.api.patch_node(node, {"spec": {"taints": taints}}, _content_type="application/merge-patch+json")


@pytest.mark.parametrize("interrupted", ["closing", "opening"])
def test_restart_mid_transition_starts_closed(fleet: Fleet, interrupted: str) -> None:
    # The old gate died after patching the first of two nodes. Closing: node 0 tainted,
    # node 1 not. Opening: node 0 untainted, node 1 still tainted. Either way the restarted
    # gate reads closed and finishes closing; opening again must be earned.
    names = [fleet.create(0), fleet.create(1)]
    if interrupted == "closing":
        gate_taint(fleet, names[0])
    else:
        gate_taint(fleet, names[1])
    metrics = GateMetrics([fleet.gate.name])
    enforcer = TaintEnforcer(KubeNodes(fleet.api), metrics, dry_run=False)
    assert enforcer.initial_states([fleet.gate]) == {fleet.gate.name: GateState.CLOSED}
    assert enforcer.enforce(fleet.gate, GateState.CLOSED)
    assert all(fleet.gated(name) for name in names)
    assert patches(metrics, fleet.gate.name, "taint") == 1
    assert sample(metrics, "trainyard_gate_closed", fleet.gate.name) == 1
    assert sample(metrics, "trainyard_gate_matched_nodes", fleet.gate.name) == 2


def test_a_wrong_taint_value_reads_closed_and_is_rewritten(fleet: Fleet) -> None:
    # Before: state came from key and value, so a changed value read as "open" and a
    # restarted gate opened every node. The scheduler matches key and effect: it is closed.
    name = fleet.create(0)
    gate_taint(fleet, name, value="maintenance")
    metrics = GateMetrics([fleet.gate.name])
    enforcer = TaintEnforcer(KubeNodes(fleet.api), metrics, dry_run=False)
    assert enforcer.initial_states([fleet.gate]) == {fleet.gate.name: GateState.CLOSED}
    enforcer.enforce(fleet.gate, GateState.CLOSED)
    values = [t["value"] for t in fleet.taints(name) if t["key"] == TAINT.key]
    assert fleet.gated(name) and values == ["closed"]
    assert sample(metrics, "trainyard_gate_closed", fleet.gate.name) == 1


def test_gate_closed_reports_the_nodes_not_the_wish(fleet: Fleet) -> None:
    # Dry run: the state machine is closed, the node is not: the metric says open (0).
    fleet.create(0)
    metrics = GateMetrics([fleet.gate.name])
    enforcer = TaintEnforcer(KubeNodes(fleet.api), metrics, dry_run=True)
    metrics.record_state(fleet.gate.name, GateState.CLOSED)
    enforcer.enforce(fleet.gate, GateState.CLOSED)
    assert sample(metrics, "trainyard_gate_desired_closed", fleet.gate.name) == 1
    assert sample(metrics, "trainyard_gate_closed", fleet.gate.name) == 0


def test_a_selector_matching_nothing_is_visible(fleet: Fleet, caplog: pytest.LogCaptureFixture) -> None:
    # Before: "closed", silently guarding nothing. Now matched_nodes is 0 (the alert
    # OverflowGateMatchesNoNode watches it) and the log says so once, not every pass.
    metrics = GateMetrics([fleet.gate.name])
    enforcer = TaintEnforcer(KubeNodes(fleet.api), metrics, dry_run=False)
    caplog.set_level(logging.WARNING, logger="trainyard_gate")
    assert enforcer.initial_states([fleet.gate]) == {fleet.gate.name: GateState.CLOSED}
    for _ in range(3):
        assert enforcer.enforce(fleet.gate, GateState.CLOSED)
    assert sample(metrics, "trainyard_gate_matched_nodes", fleet.gate.name) == 0
    assert [r.getMessage() for r in caplog.records] == ["gate selector matches no node"]


@pytest.fixture
def node_policy(kube: Kube) -> Iterator[tuple[str, Gate]]:
    """The staging MutatingAdmissionPolicy as rendered, and staging's gate for vk-<provider>."""
    objects = environment_objects(REPO_ROOT, "staging")
    for obj in objects:
        if obj["kind"] in ("MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"):
            kube.apply(obj)
    [config_map] = [
        o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "overflow-gate-policy"
    ]
    [gate] = parse(config_map["data"]["policy.yaml"], "staging policy").gates
    node = f"vk-{gate.name}"
    meta = {"name": node, "labels": {"type": "virtual-kubelet"}}
    probe = {"apiVersion": "v1", "kind": "Node", "metadata": meta}

    def policy_active() -> bool:  # policies take effect a second or two after creation
        taints = (kube.create(probe, dry_run=True).get("spec") or {}).get("taints") or []
        return any(t["key"] == gate.taint.key for t in taints)

    wait_for(policy_active, 30, "the MutatingAdmissionPolicy adding the gate taint")
    yield node, gate
    kube.delete("v1", "Node", node)


def test_a_node_recreated_while_the_gate_was_down_comes_back_closed(
    node_policy: tuple[str, Gate], api: client.CoreV1Api
) -> None:
    # The gate was open (no taint) and down; virtual-kubelet re-registered its node with
    # only its own taint. Before: the node stayed open for closeAfterSeconds (900 s in
    # prod) after the gate came back. Now admission gives it the gate taint at creation.
    node, gate = node_policy
    provider_taint = client.V1Taint(key="virtual-kubelet.io/provider", value=gate.name, effect="NoSchedule")
    api.create_node(
        client.V1Node(
            metadata=client.V1ObjectMeta(name=node, labels={"type": "virtual-kubelet"}),
            spec=client.V1NodeSpec(taints=[provider_taint]),
        )
    )
    metrics = GateMetrics([gate.name])
    enforcer = TaintEnforcer(KubeNodes(api), metrics, dry_run=False)
    assert enforcer.initial_states([gate]) == {gate.name: GateState.CLOSED}
    assert enforcer.enforce(gate, GateState.CLOSED)
    assert patches(metrics, gate.name, "taint") == 0  # admission did it, not the gate
    assert sample(metrics, "trainyard_gate_closed", gate.name) == 1
    assert sample(metrics, "trainyard_gate_matched_nodes", gate.name) == 1
    taints = {(t["key"], t["effect"]) for t in node_taints(api, node)}
    # (and the apiserver's own not-ready taint)
    assert {("virtual-kubelet.io/provider", "NoSchedule"), (gate.taint.key, "NoSchedule")} <= taints
    # An update (virtual-kubelet refreshing its node) never re-adds it once the gate opened.
    assert enforcer.enforce(gate, GateState.OPEN)
    api.patch_node(node, {"metadata": {"annotations": {"refreshed": "yes"}}})
    assert not any(t["key"] == gate.taint.key for t in node_taints(api, node))


def test_a_node_registered_before_the_policy_acts_is_closed_by_its_first_update(
    kube: Kube, api: client.CoreV1Api
) -> None:
    # The cluster in a box caught it: policies act 1 to 3 s after they are created, vk-mock
    # registered in that window without label or gate taint, the node lifecycle controller's
    # update then added the label only, and the gate adopted "open" at start-up. Now the first
    # update of a node without the provider label also closes it.
    objects = environment_objects(REPO_ROOT, "staging")
    policy = [o for o in objects if o["metadata"]["name"] == "trainyard-virtual-node-labels"]  # and binding
    [config_map] = [
        o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "overflow-gate-policy"
    ]
    [gate] = parse(config_map["data"]["policy.yaml"], "staging policy").gates
    node = f"vk-{gate.name}"
    probe = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}

    def acting() -> bool:  # what a create of this node would get, now
        taints = (kube.create(probe, dry_run=True).get("spec") or {}).get("taints") or []
        return any(t["key"] == gate.taint.key for t in taints)

    for obj in reversed(policy):  # another test may have left it in place
        kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])
    wait_for(lambda: not acting(), 30, "the MutatingAdmissionPolicy no longer acting")
    provider_taint = {"key": "virtual-kubelet.io/provider", "value": gate.name, "effect": "NoSchedule"}
    meta = {"name": node, "labels": {"type": "virtual-kubelet"}}
    kube.create({"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": {"taints": [provider_taint]}})
    try:
        assert not any(t["key"] == gate.taint.key for t in node_taints(api, node))  # the race, as it was
        for obj in policy:
            kube.apply(obj)

        def update_closes() -> bool:  # a dry-run update shows the policy's effect on this node
            updated = api.patch_node(node, {"metadata": {"annotations": {"probe": "yes"}}}, dry_run="All")
            return any(t.key == gate.taint.key for t in ((updated.spec and updated.spec.taints) or []))

        wait_for(update_closes, 30, "the policy acting on updates")
        api.patch_node(node, {"metadata": {"annotations": {"refreshed": "yes"}}})  # e.g. the NLC's update
        stored = api.read_node(node).metadata
        assert ((stored and stored.labels) or {}).get("trainyard.dev/provider") == gate.name
        closed = [t for t in node_taints(api, node) if t["key"] == gate.taint.key]
        assert closed == [{"key": gate.taint.key, "value": "closed", "effect": "NoSchedule"}]
        metrics = GateMetrics([gate.name])
        enforcer = TaintEnforcer(KubeNodes(api), metrics, dry_run=False)
        assert enforcer.initial_states([gate]) == {gate.name: GateState.CLOSED}
        # Once labelled, an update never closes it again: an opened gate stays open.
        assert enforcer.enforce(gate, GateState.OPEN)
        api.patch_node(node, {"metadata": {"annotations": {"refreshed": "again"}}})
        assert not any(t["key"] == gate.taint.key for t in node_taints(api, node))
    finally:
        kube.delete("v1", "Node", node)


def node_taints(api: client.CoreV1Api, node: str) -> list[dict[str, str]]:
    spec = api.read_node(node).spec
    return list(api.api_client.sanitize_for_serialization((spec and spec.taints) or []))


class Replica:
    """One `python -m trainyard_gate` with leader election, and its /metrics."""

    def __init__(
        self, identity: str, policy: Path, kubeconfig: Path, namespace: str, lease: str, workdir: Path
    ) -> None:
        self.identity = identity
        self.program = gate_program(
            identity,
            policy,
            kubeconfig,
            workdir / f"{identity}.log",
            "--node-resync-seconds=0.5",
            f"--lease-namespace={namespace}",
            f"--lease-name={lease}",
            f"--identity={identity}",
            "--lease-seconds=4",
            "--renew-seconds=3",
            "--retry-seconds=1",
        )
        self.daemon = self.program.daemon
        self.daemon.start()

    def value(self, name: str, **labels: str) -> float | None:
        return self.program.sample(name, **labels)

    def patches(self, gate: str) -> float:
        total = 0.0
        for action in ("taint", "untaint"):
            total += (
                self.value("trainyard_gate_node_patches_total", action=action, dry_run="false", gate=gate)
                or 0
            )
        return total


def test_two_replicas_one_leader_no_flapping(
    fleet: Fleet, kube: Kube, kubeconfig: Path, exporter: Exporter, prometheus_url: str, tmp_path: Path
) -> None:
    # Before: no election; two replicas 2 s apart flipped the taint 6 times in 7 s.
    namespace = f"gate-lease-{uuid.uuid4().hex[:6]}"
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    node = fleet.create(0)
    gate_taint(fleet, node)  # closed at start; free GPUs are scarce, so the leader opens it
    gate_doc = {
        "name": fleet.gate.name,
        "nodeSelector": {"matchLabels": dict(fleet.gate.match_labels)},
        "taint": {"key": TAINT.key, "value": TAINT.value, "effect": "NoSchedule"},
        "closeWhenFreeGpusAtLeast": 64,
        "closeAfterSeconds": 1,
        "openWhenFreeGpusBelow": 16,
        "openAfterSeconds": 1,
    }
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "trainyard.dev/v1alpha1",
                "kind": "TaintPolicy",
                "metadata": {"name": "overflow-gate"},
                "spec": {
                    "prometheus": {"url": prometheus_url, "timeoutSeconds": 2},
                    "query": METRIC,
                    "reconcileIntervalSeconds": 0.5,
                    "onPrometheusUnavailable": "hold",
                    "gates": [gate_doc],
                },
            }
        )
    )
    exporter.set(8)  # scarce: the gate wants open
    lease = "overflow-gate"
    first = Replica("gate-a", policy, kubeconfig, namespace, lease, tmp_path)
    second: Replica | None = None
    try:
        first.daemon.wait_until(lambda: first.value("trainyard_gate_leader") == 1, 60, "gate-a leading")
        second = Replica("gate-b", policy, kubeconfig, namespace, lease, tmp_path)
        second.daemon.wait_until(
            lambda: second is not None and second.value("trainyard_gate_leader") == 0,
            60,
            "gate-b standing by",
        )
        wait_for(lambda: not fleet.gated(node), 30, "the leader opening the gate")

        # Ten seconds, well over two lease durations: the holder never changes, the node is
        # patched once (by the leader) and never flips, the stand-by patches nothing.
        holders, versions = set(), set()
        began = time.monotonic()
        while time.monotonic() - began < 10:
            found = kube.get("coordination.k8s.io/v1", "Lease", lease, namespace)
            assert found is not None
            holders.add(found["spec"]["holderIdentity"])
            versions.add(fleet.version(node))
            assert second.value("trainyard_gate_leader") == 0 and first.value("trainyard_gate_leader") == 1
            time.sleep(0.5)
        assert holders == {"gate-a"} and len(versions) == 1, (holders, versions)
        assert first.patches(fleet.gate.name) == 1 and second.patches(fleet.gate.name) == 0

        # The leader dies without a word (SIGKILL: no chance to release anything). The
        # stand-by takes the Lease after it expires, reads "open" from the node, patches nothing.
        assert first.daemon.process is not None
        os.killpg(first.daemon.process.pid, signal.SIGKILL)
        killed = time.monotonic()
        second.daemon.wait_until(
            lambda: second is not None and second.value("trainyard_gate_leader") == 1,
            30,
            "gate-b taking over",
        )
        took = time.monotonic() - killed
        found = kube.get("coordination.k8s.io/v1", "Lease", lease, namespace)
        assert found is not None and found["spec"]["holderIdentity"] == "gate-b"
        assert took < 4 + 3, f"takeover took {took:.1f}s with a 4 s lease"
        time.sleep(2)
        assert second.patches(fleet.gate.name) == 0 and not fleet.gated(node)
        lines = second.daemon.log_text().splitlines()
        logs = [json.loads(line)["msg"] for line in lines if line.startswith("{")]
        assert logs.count("leading") == 1 and "standing by for the lease" in logs
    finally:
        for replica in (first, second):
            if replica is not None:
                replica.daemon.stop()
        kube.delete("v1", "Namespace", namespace)
