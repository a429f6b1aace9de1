"""Scene immutable-change on `box up staging` (docs/immutable-fields.md).

The refusals are the real kube-apiserver v1.36.5's (PriorityClass: pkg/apis/scheduling/
validation/validation.go, RBAC and apps validation) and the pinned Kueue v0.19.2 CRDs' CEL
rules and webhooks; the expected messages below are theirs, copied as literals. The values
are staging's spec: tier `training` is 900000 (environments/_defaults.yaml), and the scene
raises it by one. The box's sync is box/manifests.py apply_all (sync-wave order,
Force=true,Replace=true honoured as Argo CD does).
"""

from __future__ import annotations

import pytest
import yaml

from box.kube import is_true
from generators.components.monitoring import adapter as rendered_adapter
from tests.support import ROOT
from tests.support.box import SceneRun, UpBox

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

BOX_ENV = ENV = "staging"  # the shared staging box, the scene run once on it (tests/box/conftest.py)
SCENE = "immutable-change"
SCENE_SECONDS = 600


def test_the_scene_passes(scene: SceneRun) -> None:
    assert scene.done.returncode == 0, scene.done.stdout + scene.done.stderr[-4000:]
    assert scene.done.stdout.splitlines()[-1] == "OK"


def test_a_plain_apply_is_refused_at_wave_0_and_later_waves_stay_unapplied(scene: SceneRun) -> None:
    lines = scene.done.stdout.splitlines()
    assert (
        "plain apply, wave order: refused at PriorityClass training: PriorityClass.scheduling.k8s.io "
        '"training" is invalid: value: Forbidden: may not be changed in an update.'
    ) in lines
    assert (
        "  never applied: ConfigMap trainyard-system/overflow-gate-policy, "
        "Deployment trainyard-system/overflow-gate"
    ) in lines


def test_the_documented_sync_recreates_only_the_priority_class_and_applies_later_waves(
    scene: SceneRun,
) -> None:
    lines = scene.done.stdout.splitlines()
    assert (
        "sync with Force=true,Replace=true: recreated PriorityClass training; live values "
        "{'PriorityClass': 900001, 'WorkloadPriorityClass': 900001}; applied: ConfigMap "
        "trainyard-system/overflow-gate-policy, Deployment trainyard-system/overflow-gate"
    ) in lines
    assert "pod admitted before keeps priority 900000; pod created after: 900001" in lines
    assert "ClusterQueues Active: True" in lines


def test_the_check_notes_the_recreate_and_refuses_a_topology_change_at_its_spec_line(scene: SceneRun) -> None:
    checks = [line for line in scene.done.stdout.splitlines() if line.startswith("check: ")]
    assert len(checks) == 2, checks
    assert (
        ": note: PriorityClass training value 900000 -> 900001: immutable, so Argo CD deletes and "
        "recreates it (Force=true,Replace=true) (priorities.tiers[1].value);" in checks[0]
    )
    # the scene's copy of staging.yaml (re-dumped): its pools[0].topology.levels line
    assert checks[1].startswith("check: environments/staging.yaml:")
    assert (
        ": error: Topology train-h100 spec.levels [topology.trainyard.dev/rack, "
        "kubernetes.io/hostname] -> [topology.trainyard.dev/zone, topology.trainyard.dev/rack, "
        "kubernetes.io/hostname]: the API refuses this change in place"
    ) in checks[1]
    assert (
        "(pools[0].topology.levels); rename the pool in the same change (e.g. train-h100 -> train-h100-v2"
    ) in checks[1]
    assert (
        'plain apply of the Topology change: refused: Topology.kueue.x-k8s.io "train-h100" is invalid: '
        "spec.levels: Invalid value: field is immutable"
    ) in scene.done.stdout.splitlines()


def test_every_rule_the_environment_renders_is_refused_by_the_api(scene: SceneRun) -> None:
    out = scene.done.stdout.splitlines()
    lines = [line.removeprefix("API on ") for line in out if line.startswith("API on ")]
    refused = dict(line.split(": refused: ", 1) for line in lines if ": refused: " in line)
    assert {rule: message.split(" is invalid: ")[1] for rule, message in refused.items()} == {
        "PriorityClass value": "value: Forbidden: may not be changed in an update.",
        "PriorityClass preemptionPolicy": (
            'preemptionPolicy: Invalid value: "PreemptLowerPriority": field is immutable'
        ),
        "Topology spec.levels": "spec.levels: Invalid value: field is immutable",
        "ResourceFlavor spec.nodeLabels": (
            "spec: Invalid value: nodeLabels are immutable when topologyName is set"
        ),
        "ResourceFlavor spec.tolerations": (
            "spec: Invalid value: tolerations are immutable when topologyName is set"
        ),
        "ResourceFlavor spec.topologyName": (
            "spec: Invalid value: topologyName is immutable when topologyName is set"
        ),
        "LocalQueue spec.clusterQueue": 'spec.clusterQueue: Invalid value: "evals": field is immutable',
        "RoleBinding roleRef": (
            'roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role",'
            '"Name":"gpu-health-changed"}: cannot change roleRef'
        ),
        "ClusterRoleBinding roleRef": (
            'roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole",'
            '"Name":"trainyard-gpu-health-changed"}: cannot change roleRef'
        ),
        "Deployment spec.selector": (
            'spec.selector: Invalid value: {"matchLabels":{"app.kubernetes.io/name":'
            '"gpu-health","trainyard.dev/box-scene":"changed"}}: field is immutable'
        ),
    }
    assert "API on WorkloadPriorityClass value: admitted (mutable)" in scene.done.stdout.splitlines()


def test_the_box_is_back_on_its_rendering(scene: SceneRun) -> None:
    """What the controllers and the API hold now, against the committed rendered/ files."""
    assert "original rendering synced back: True" in scene.done.stdout.splitlines()
    priority = scene.kube.get("scheduling.k8s.io/v1", "PriorityClass", "training")
    assert priority is not None and priority["value"] == 900000
    rendered = yaml.safe_load(
        (
            ROOT / "rendered" / ENV / "overflow" / "trainyard-system" / "configmap-overflow-gate-policy.yaml"
        ).read_text(encoding="utf-8")
    )
    live = scene.kube.get("v1", "ConfigMap", "overflow-gate-policy", "trainyard-system")
    assert live is not None and live["data"] == rendered["data"]
    queues = scene.kube.list("kueue.x-k8s.io/v1beta2", "ClusterQueue")
    assert queues and all(is_true(q, "Active") for q in queues)
    assert not scene.kube.list("v1", "Pod", "foundation", label_selector="trainyard.dev/box-scene")


def test_the_migration_for_a_refused_change_reaches_the_cluster(scene: SceneRun) -> None:
    """The pool renamed with new levels (docs/immutable-fields.md): the old flavor and topology
    are gone after the prune, so Kueue lifted its finalizers; the queues hold the new flavor."""
    lines = scene.done.stdout.splitlines()
    assert (
        "migration: pool train-h100 renamed train-h100-v2 with levels [kubernetes.io/hostname]; "
        "check: nothing refused"
    ) in lines
    prefix = "  pruned last (gone: Kueue lifted its finalizers): "
    [pruned] = [line for line in lines if line.startswith(prefix)]
    assert pruned.endswith("Topology train-h100, ResourceFlavor train-h100")
    assert (
        "  ClusterQueues now: {'evals': ['train-h100-v2'], 'foundation': ['train-h100-v2'], "
        "'research': ['train-h100-v2']}; live levels [kubernetes.io/hostname]; Active: True"
    ) in lines
    assert (
        "  renamed back the same way; pruned: Topology train-h100-v2, ResourceFlavor train-h100-v2" in lines
    )
    flavors = {f["metadata"]["name"] for f in scene.kube.list("kueue.x-k8s.io/v1beta2", "ResourceFlavor")}
    assert flavors == {"train-h100", "infer-l40s"}  # rendered/staging/kueue/resourceflavor-*.yaml


def test_the_adapter_is_still_wired_to_its_host_process(box: UpBox, scene: SceneRun) -> None:
    """`box up` wires the adapter's Service and APIService to the host process
    (box/adapter.py register); the scene's syncs must leave them so, or External metrics are
    gone for whatever runs on the box next (the inference-scales scene found it so)."""
    [adapter] = [p for p in box.state.processes if p.name == rendered_adapter.NAME]
    api = scene.kube.get("apiregistration.k8s.io/v1", "APIService", rendered_adapter.APISERVICE_NAME)
    assert api is not None and api["spec"]["service"]["port"] == adapter.ports[0], api
    [service] = [
        s for s in scene.kube.list("v1", "Service") if s["metadata"]["name"] == rendered_adapter.NAME
    ]
    assert service["spec"]["type"] == "ExternalName" and service["spec"]["externalName"] == "127.0.0.1"
