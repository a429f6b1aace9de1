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

from box.kube import Kube, Obj, wait_for

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
    policy = _config_map_data(objects, "overflow-gate-policy", "policy.yaml")
    return [
        Gate(g["name"], dict(g["nodeSelector"]["matchLabels"]), dict(g["taint"]))
        for g in policy["spec"]["gates"]
    ]


def virtual_node_names(objects: list[Obj]) -> dict[str, str]:
    """Provider -> virtual node name: the --nodename of the rendered vk-<provider> Deployment."""
    names = {}
    for obj in objects:
        meta = obj["metadata"]
        if obj["kind"] == "Deployment" and meta["name"].startswith("vk-"):
            for container in obj["spec"]["template"]["spec"]["containers"]:
                for arg in container.get("args") or []:
                    if arg.startswith("--nodename="):
                        names[meta["name"].removeprefix("vk-")] = arg.split("=", 1)[1]
    return names


def timestamp(ago: datetime.timedelta = datetime.timedelta(0)) -> str:
    return (datetime.datetime.now(datetime.UTC) - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


def wait_node_labelled(kube: Kube, name: str, labels: dict[str, str], expected: dict[str, str]) -> None:
    """Until a dry-run create of Node `name` comes back with `expected` labels added.

    Admission policies take effect a second or two after they are created (the apiserver
    compiles them from its informer); a virtual-kubelet registering in that window would
    miss the label. Dry-run: admission runs, nothing is stored.
    """
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}

    def labelled() -> bool:
        admitted = kube.create(body, dry_run=True)
        present: dict[str, str] = admitted["metadata"].get("labels", {})
        return expected.items() <= present.items()

    wait_for(labelled, 30, f"admission policies labelling node {name} with {expected}")


def make_ready_node(
    kube: Kube,
    name: str,
    labels: dict[str, str],
    taints: list[dict[str, str]],
    gpus: int,
    capacity: dict[str, str] | None = None,
) -> Obj:
    """Create a Node, write a kubelet-like status (Ready, allocatable: `capacity`, else a
    64-core node with `gpus` GPUs), keep only `taints`."""
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints},
        }
    )
    capacity = capacity or {"cpu": "64", "memory": "512Gi", "pods": "110", GPU: str(gpus)}
    now = timestamp()
    status = {
        "capacity": capacity,
        "allocatable": capacity,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "test kubelet",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        ],
    }
    kube.patch_status("v1", "Node", name, status)
    # The TaintNodesByCondition admission plugin put node.kubernetes.io/not-ready:NoSchedule
    # on the new node; the node lifecycle controller (no controller-manager here) would drop
    # it once the node reports Ready. Without this nothing would fit on the in-cluster nodes.
    return kube.merge_patch("v1", "Node", name, {"spec": {"taints": taints or None}})


def owner_replica_set(kube: Kube, namespace: str, name: str, replicas: int) -> Obj:
    """A ReplicaSet to own the pods (bare pods are never evicted; no controller acts on it)."""
    labels = {"app.kubernetes.io/name": name}
    return kube.create(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [CONTAINER]}},
            },
        }
    )


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
        "containers": [
            {
                "name": "server",
                "image": "registry.example/vllm:1",
                "resources": {
                    "requests": {GPU: str(spec.gpus), "cpu": "4", "memory": "32Gi"},
                    "limits": {GPU: str(spec.gpus)},
                },
            }
        ],
    }
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
