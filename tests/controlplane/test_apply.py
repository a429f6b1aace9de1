"""Every rendered object of every shipped environment against a real apiserver.

kubeconform checks shapes; only the apiserver runs the CRDs' CEL rules, admission policies
(the overflow component's ValidatingAdmissionPolicy / MutatingAdmissionPolicy are compiled
and type-checked on create), strict field validation and defaulting. Environments reuse
names (namespaces, queues), so each test applies one environment and removes it again.
"""

from __future__ import annotations

from typing import Any

import pytest

from box.kube import Kube, Obj
from box.manifests import (
    REPO_ROOT,
    apply_all,
    ensure_external_namespaces,
    environment_objects,
    identity,
    in_sync_wave_order,
    remove_all,
)
from generators.layout import environment_names

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

SHIPPED = environment_names(REPO_ROOT)
STATUS_WRITTEN_BY_THE_SERVER = {"APIService"}  # kinds whose status the kube-apiserver itself updates


def _applied(obj: Obj) -> list[Any]:
    return [entry for entry in obj["metadata"]["managedFields"] if entry.get("operation") == "Apply"]


def differences(sent: Any, stored: Any, path: str = "") -> list[str]:
    """Leaves of `sent` that the server stored differently (or dropped).

    A zero value (false, 0, "", empty list or map) the server omits is not a difference:
    the API's `omitempty` drops it and reads it back as the same value.
    """
    if stored is None and sent in (False, 0, "", [], {}):
        return []
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [f"{path or '.'}: sent a mapping, stored {stored!r}"]
        return [
            line
            for key, value in sent.items()
            for line in differences(value, stored.get(key), f"{path}.{key}")
        ]
    if isinstance(sent, list):
        if not isinstance(stored, list) or len(stored) != len(sent):
            return [f"{path}: sent {len(sent)} items, stored {stored!r}"]
        return [
            line
            for index, (a, b) in enumerate(zip(sent, stored, strict=True))
            for line in differences(a, b, f"{path}[{index}]")
        ]
    return [] if sent == stored else [f"{path}: sent {sent!r}, stored {stored!r}"]


def test_shipped_environments_exist() -> None:
    assert {"dev", "staging", "prod"} <= set(SHIPPED), SHIPPED


def test_rendered_tree_matches_what_the_test_applies() -> None:
    """The test renders in memory; make sure that is what rendered/ holds (same counts),
    installer inputs (installers/: not applied by Argo CD, nor here) aside."""
    for name in SHIPPED:
        base = REPO_ROOT / "rendered" / name
        on_disk = [p for p in base.rglob("*.yaml") if p.relative_to(base).parts[0] != "installers"]
        assert len(on_disk) == len(environment_objects(REPO_ROOT, name)), name


def test_sync_wave_order_puts_namespaces_first() -> None:
    objects = in_sync_wave_order(environment_objects(REPO_ROOT, "prod"))
    first_other = next(i for i, obj in enumerate(objects) if obj["kind"] != "Namespace")
    assert all(obj["kind"] != "Namespace" for obj in objects[first_other:])


@pytest.mark.parametrize("env_name", SHIPPED)
def test_server_side_apply_accepts_everything_and_reapply_changes_nothing(env_name: str, kube: Kube) -> None:
    objects = environment_objects(REPO_ROOT, env_name)
    external = ensure_external_namespaces(kube, objects)
    try:
        first = apply_all(kube, objects)
        assert len(first) == len(objects)
        # The server keeps every field exactly as rendered: a pruned (unknown) field or a
        # re-canonicalised quantity would make Argo CD report OutOfSync forever.
        for obj in objects:
            changed = differences(_comparable(obj), first[identity(obj)])
            assert not changed, f"{'/'.join(identity(obj))}: {changed}"

        second = apply_all(kube, objects)
        for key, stored in first.items():
            again = second[key]
            if key[1] in STATUS_WRITTEN_BY_THE_SERVER:
                # The aggregator writes the APIService's Available condition (its Service has
                # no backend here) between the two applies: only what the apply owns counts.
                assert again["metadata"].get("generation") == stored["metadata"].get("generation"), key
                assert _applied(again) == _applied(stored), key
                continue
            assert again["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"], key
            assert again["metadata"].get("generation") == stored["metadata"].get("generation"), key
            assert again["metadata"]["managedFields"] == stored["metadata"]["managedFields"], key
    finally:
        remove_all(kube, objects, external)
    for obj in objects:
        meta = obj["metadata"]
        assert kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")) is None


def _comparable(obj: Obj) -> Obj:
    """The rendered object minus what the server owns (nothing today; a hook for status)."""
    return {key: value for key, value in obj.items() if key != "status"}


def test_apply_refuses_an_invalid_cluster_queue(kube: Kube) -> None:
    """The harness is not a rubber stamp: a CEL rule in Kueue's CRD refuses a bad queue."""
    objects = environment_objects(REPO_ROOT, "dev")
    queue = next(obj for obj in objects if obj["kind"] == "ClusterQueue")
    assert queue["spec"]["preemption"]["borrowWithinCohort"]["policy"] != "Never"
    # x-kubernetes-validations: reclaimWithinCohort=Never forbids borrowWithinCohort.policy!=Never.
    queue["spec"]["preemption"]["reclaimWithinCohort"] = "Never"
    name = queue["metadata"]["name"]
    try:
        with pytest.raises(Exception, match="reclaimWithinCohort=Never and borrowWithinCohort"):
            kube.apply(queue)
        assert kube.get(queue["apiVersion"], "ClusterQueue", name) is None
    finally:
        kube.delete(queue["apiVersion"], "ClusterQueue", name)
