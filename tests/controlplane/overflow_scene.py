"""Nodes and inference pods for the overflow tests, built from an environment's rendered objects.

A virtual node is created the way virtual-kubelet registers one (its default labels and
provider taint; the rendered MutatingAdmissionPolicy adds trainyard.dev/provider), then
closed with the rendered gate taint. In-cluster GPU nodes have room. Nodes are marked
Ready with allocatable resources through the status subresource, as a kubelet would.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import yaml

from tests.controlplane.kube import Kube, Obj

GPU = "nvidia.com/gpu"
CONTAINER = {"name": "server", "image": "registry.example/vllm:1"}
OLD_ENOUGH = datetime.timedelta(minutes=30)  # beyond any sane minPodAge


@dataclass(frozen=True)
class Gate:
    """One gate of the rendered TaintPolicy: which nodes, which taint."""

    name: str
    match_labels: dict[str, str]
    taint: dict[str, str]


def _config_map_data(objects: list[Obj], name: str, key: str) -> dict[str, Any]:
    [config_map] = [obj for obj in objects if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == name]
    data: dict[str, Any] = yaml.safe_load(config_map["data"][key])
    return data


def gates(objects: list[Obj]) -> list[Gate]:
    policy = _config_map_data(objects, "overflow-gate", "policy.yaml")
    return [
        Gate(g["name"], dict(g["nodeSelector"]["matchLabels"]), dict(g["taint"]))
        for g in policy["spec"]["gates"]
    ]


def virtual_node_names(objects: list[Obj]) -> dict[str, str]:
    """Provider -> virtual node name, from the rendered virtual-kubelet ConfigMaps (vk-<provider>)."""
    names = {}
    for obj in objects:
        meta = obj["metadata"]
        if obj["kind"] == "ConfigMap" and meta["name"].startswith("vk-"):
            config = yaml.safe_load(obj["data"]["config.json"])
            [node] = config  # the mock/provider config is keyed by node name
            names[meta["name"].removeprefix("vk-")] = node
    return names


def timestamp(ago: datetime.timedelta = datetime.timedelta(0)) -> str:
    return (datetime.datetime.now(datetime.UTC) - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_ready_node(kube: Kube, name: str, labels: dict[str, str], taints: list[dict[str, str]],
                    gpus: int) -> Obj:  # fmt: skip
    """Create a Node and write a kubelet-like status: Ready, with allocatable GPUs."""
    kube.create({"apiVersion": "v1", "kind": "Node",
                 "metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}})  # fmt: skip
    capacity = {"cpu": "64", "memory": "512Gi", "pods": "110", GPU: str(gpus)}
    now = timestamp()
    status = {
        "capacity": capacity,
        "allocatable": capacity,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "test kubelet", "lastHeartbeatTime": now, "lastTransitionTime": now}],
    }  # fmt: skip
    return kube.patch_status("v1", "Node", name, status)


def owner_replica_set(kube: Kube, namespace: str, name: str, replicas: int) -> Obj:
    """A ReplicaSet to own the pods (bare pods are never evicted; no controller acts on it)."""
    labels = {"app.kubernetes.io/name": name}
    return kube.create({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [CONTAINER]}}},
    })  # fmt: skip


@dataclass
class PodSpec:
    """One inference pod to place; defaults give a pod the rendered policy should evict."""

    name: str
    namespace: str
    node: str
    tolerations: list[dict[str, Any]]
    owner: Obj | None = None
    gpus: int = 1
    started: datetime.timedelta = OLD_ENOUGH  # how long ago the kubelet started it
    priority_class: str | None = None


def place_pod(kube: Kube, spec: PodSpec) -> Obj:
    """Create the pod bound to `spec.node` and mark it Running as the kubelet would."""
    metadata: dict[str, Any] = {"name": spec.name, "namespace": spec.namespace}
    if spec.owner is not None:
        owner_meta = spec.owner["metadata"]
        metadata["labels"] = dict(owner_meta["labels"])
        reference = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner_meta["name"]}
        metadata["ownerReferences"] = [{**reference, "uid": owner_meta["uid"], "controller": True}]
    pod_spec: dict[str, Any] = {
        "nodeName": spec.node,
        "tolerations": spec.tolerations,
        "containers": [{"name": "server", "image": "registry.example/vllm:1",
                        "resources": {"requests": {GPU: str(spec.gpus), "cpu": "4", "memory": "32Gi"},
                                      "limits": {GPU: str(spec.gpus)}}}],
    }  # fmt: skip
    if spec.priority_class:
        pod_spec["priorityClassName"] = spec.priority_class
    kube.create({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec})
    started = timestamp(spec.started)
    status = {
        "phase": "Running",
        "startTime": started,
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": started}],
    }
    return kube.patch_status("v1", "Pod", spec.name, status, spec.namespace)
