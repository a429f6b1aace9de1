"""The derivations behind the Argo CD objects, on hand-made objects: kinds, ignored fields,
and server-side apply for large objects through the real render pipeline."""

from __future__ import annotations

from typing import Any

import pytest

from generators.components import argocd, registry
from generators.gitops import syncoptions
from generators.k8s.objects import Obj
from generators.model.load import load
from generators.pipeline import render
from tests.support import ROOT


def _obj(api_version: str, kind: str, name: str, namespace: str | None = None, **spec: Any) -> Obj:
    meta: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


def _hpa(deployment: str, namespace: str) -> Obj:
    """An HPA named for the Deployment it scales."""
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment}
    return _obj("autoscaling/v2", "HorizontalPodAutoscaler", deployment, namespace, scaleTargetRef=target)


def test_group_kinds_splits_by_namespace_and_sorts() -> None:
    objects = [
        _obj("apps/v1", "Deployment", "gate", "ops"),
        _obj("v1", "Namespace", "ops"),
        _obj("kueue.x-k8s.io/v1beta2", "LocalQueue", "a", "ops"),
        _obj("apps/v1", "Deployment", "other", "ops"),
    ]
    cluster, namespaced = argocd.group_kinds(objects)
    assert cluster == [{"group": "", "kind": "Namespace"}]
    assert namespaced == [
        {"group": "apps", "kind": "Deployment"},
        {"group": "kueue.x-k8s.io", "kind": "LocalQueue"},
    ]


def test_group_kinds_refuses_a_kind_in_both_scopes() -> None:
    with pytest.raises(ValueError, match="ConfigMap"):
        argocd.group_kinds([_obj("v1", "ConfigMap", "a", "x"), _obj("v1", "ConfigMap", "b")])


def test_hpa_target_replicas_are_ignored() -> None:
    hpa = _hpa("gate", "ops")
    entries = argocd.ignore_differences([_obj("apps/v1", "Deployment", "gate", "ops"), hpa])
    assert entries == [
        {
            "group": "apps",
            "kind": "Deployment",
            "name": "gate",
            "namespace": "ops",
            "jsonPointers": ["/spec/replicas"],
        }
    ]


def test_replicas_of_a_target_another_application_manages_are_not_ignored_here() -> None:
    """Argo CD would not apply the entry (controller/state.go:774): the target's owner must."""
    hpa = _hpa("chat-api", "serving")
    elsewhere = _obj("apps/v1", "Deployment", "chat-api", "other-namespace")
    assert argocd.ignore_differences([hpa, elsewhere]) == []
    assert [e["name"] for e in argocd.hpa_target_replicas([hpa])] == ["chat-api"]


def test_a_defaulted_field_we_render_stays_enforced() -> None:
    held = _obj("kueue.x-k8s.io/v1beta2", "ClusterQueue", "a", stopPolicy="Hold")
    plain = _obj("kueue.x-k8s.io/v1beta2", "ClusterQueue", "b", queueingStrategy="StrictFIFO")
    [entry] = argocd.ignore_differences([held, plain])
    assert entry["kind"] == "ClusterQueue"
    assert entry["jsonPointers"] == ["/spec/flavorFungibility", "/spec/preemption"]
    assert entry["jqPathExpressions"] == [
        '.metadata.finalizers[]? | select(. == "kueue.x-k8s.io/resource-in-use")'
    ]


def test_kinds_without_controller_fields_get_no_entry() -> None:
    assert (
        argocd.ignore_differences(
            [_obj("v1", "Namespace", "a"), _obj("kueue.x-k8s.io/v1beta2", "Cohort", "c")]
        )
        == []
    )


def test_sync_options_append_without_repeating() -> None:
    obj = _obj("v1", "ConfigMap", "a", "x")
    obj["metadata"]["annotations"] = {syncoptions.ANNOTATION: "Prune=false"}
    syncoptions.add(obj, syncoptions.SERVER_SIDE_APPLY)
    syncoptions.add(obj, syncoptions.SERVER_SIDE_APPLY)
    assert obj["metadata"]["annotations"][syncoptions.ANNOTATION] == "Prune=false,ServerSideApply=true"


def test_only_large_objects_are_applied_server_side(monkeypatch: pytest.MonkeyPatch) -> None:
    big = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "big", "namespace": "ops"},
        "data": {"dashboard.json": "x" * (syncoptions.SERVER_SIDE_APPLY_ABOVE_BYTES + 1)},
    }
    small = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "small", "namespace": "ops"},
        "data": {"a": "b"},
    }
    only = registry.Component("namespaces", lambda _env, _earlier: [big, small])
    monkeypatch.setattr(render, "COMPONENTS", (only,))
    files = {f.path: f for f in render.render_environment(load(ROOT, "dev"))}
    annotations = {path: f.obj["metadata"]["annotations"] for path, f in files.items()}
    assert annotations["namespaces/ops/configmap-big.yaml"][syncoptions.ANNOTATION] == "ServerSideApply=true"
    assert syncoptions.ANNOTATION not in annotations["namespaces/ops/configmap-small.yaml"]
    assert "ServerSideApply=true" in files["namespaces/ops/configmap-big.yaml"].text
