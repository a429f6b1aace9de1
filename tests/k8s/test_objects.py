"""generators/k8s/objects.py: the single objects several components render, through their
templates under templates/common/. Expected objects are literals (the Kubernetes API's
fields); the rendered files of every environment are kubeconform-checked in
tests/validation/test_kubeconform.py."""

from __future__ import annotations

from generators.k8s.objects import config_map, service


def test_a_config_map_carries_labels_and_annotations_only_when_given() -> None:
    assert config_map("c", "ns", {"k": "v"}) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns"},
        "data": {"k": "v"},
    }
    labelled = config_map("c", "ns", {}, labels={"a": "b"}, annotations={"x": "y"})
    assert labelled["metadata"] == {
        "name": "c",
        "namespace": "ns",
        "labels": {"a": "b"},
        "annotations": {"x": "y"},
    }


def test_a_service_sends_its_named_port_to_the_container_port_of_that_name() -> None:
    spec = service("gate", "ns", 8080, "metrics")["spec"]
    assert spec["selector"] == {"app.kubernetes.io/name": "gate"}
    assert spec["ports"] == [{"name": "metrics", "port": 8080, "targetPort": "metrics"}]
