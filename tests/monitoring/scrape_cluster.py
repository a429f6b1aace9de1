"""The cluster side of the live scrape: nodes shaped like an environment's pools, and the
chart's kube-state-metrics and node-exporter Services, Pods and Endpoints.

Nothing here runs a kubelet, scheduler or endpoints controller (the test apiserver has
none), so this module writes what they would: each Node's status (Ready, capacity and
allocatable from the pool's `perNode`, an InternalIP), each Pod bound to its node with the
status a kubelet reports (Running, Ready, podIP/hostIP), and each Service's Endpoints as the
endpoints controller builds them (one address per Ready pod the selector matches, with
nodeName and a Pod targetRef; ports resolved from the Service's targetPort). Pods are the
chart's own pod templates (the DaemonSet's on every node, the Deployment's once), so
Prometheus' kubernetes_sd sees the labels, ports and node names a cluster would give it.

Addresses: the apiserver refuses loopback addresses in Endpoints (`ValidateEndpointIP`,
k8s.io/kubernetes pkg/apis/core/validation/validation.go), and every host here shares one
network namespace anyway. So nodes and pods get addresses of TEST-NET-1 (192.0.2.0/24,
RFC 5737: routed nowhere), the Endpoints carry those with the chart's ports, and
Prometheus reaches them through a forwarding proxy standing in for the pod network
(scrape_processes.PodNetwork) that maps each address:port to where the process listens.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from box.kube import Kube, Obj, wait_for
from generators.model.environment import Environment
from generators.model.types import Pool
from tests.controlplane.overflow_scene import make_ready_node, timestamp

SUBNET = "192.0.2."  # TEST-NET-1: node .10 and up, kube-state-metrics' pod .200
NODES_PER_POOL = 2
SYSTEM_NODE = "system-000"  # where kube-state-metrics runs: a plain CPU node
GPU_POD_REQUEST = 3  # GPUs the one inference pod holds on the pool's first node
IB_RESOURCE = "rdma/ib"  # a pool with this extra resource has that many HCAs per node


@dataclass(frozen=True)
class NodePlan:
    name: str
    address: str  # InternalIP (in SUBNET)
    labels: dict[str, str]
    taints: list[dict[str, str]]
    capacity: dict[str, str]
    hcas: int  # InfiniBand HCAs (mlx5_0 .. mlx5_<n-1>), one port each
    pool: Pool | None = None


def _quantity(value: Any) -> str:
    return str(int(value))


def plan_nodes(env: Environment, block: str = SUBNET) -> list[NodePlan]:
    """A system node, then the first NODES_PER_POOL nodes of every pool (named as the
    pools' nodes are, `<pool>-000`), labelled, tainted and sized as the pool says."""
    kubelet = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
    plans = [
        NodePlan(
            SYSTEM_NODE,
            f"{block}10",
            {**kubelet, "kubernetes.io/hostname": SYSTEM_NODE},
            [],
            {"cpu": "16", "memory": str(64 << 30), "pods": "110"},
            0,
        )
    ]
    for pool in env.pools:
        for index in range(NODES_PER_POOL):
            name = f"{pool.name}-{index:03d}"
            capacity = {resource: _quantity(amount) for resource, amount in pool.per_node.items()}
            taints = [{"key": t.key, "value": t.value or "", "effect": t.effect} for t in pool.taints]
            plans.append(
                NodePlan(
                    name,
                    f"{block}{10 + len(plans)}",
                    {**kubelet, "kubernetes.io/hostname": name, **pool.node_labels},
                    taints,
                    {**capacity, "pods": "110"},
                    int(pool.per_node.get(IB_RESOURCE, 0)),
                    pool,
                )
            )
    return plans


def create_node(kube: Kube, plan: NodePlan) -> None:
    gpus = int(plan.capacity.get(plan.pool.gpu_resource, 0)) if plan.pool else 0
    make_ready_node(kube, plan.name, plan.labels, plan.taints, gpus, plan.capacity)
    addresses = [{"type": "InternalIP", "address": plan.address}, {"type": "Hostname", "address": plan.name}]
    kube.patch_status("v1", "Node", plan.name, {"addresses": addresses})


def pod_from_template(workload: Obj, name: str, node: str, pod_ip: str, host_ip: str) -> tuple[Obj, Obj]:
    """(Pod, kubelet status) for one replica of `workload`'s template bound to `node`."""
    template = workload["spec"]["template"]
    spec = {**template["spec"], "nodeName": node}
    spec.pop("affinity", None)  # the scheduler's business; the pod is bound already
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": workload["metadata"]["namespace"],
            "labels": dict(template["metadata"].get("labels") or {}),
            "annotations": dict(template["metadata"].get("annotations") or {}),
        },
        "spec": spec,
    }
    now = timestamp()
    ready = [
        {"type": kind, "status": "True", "lastTransitionTime": now}
        for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
    ]
    status = {
        "phase": "Running",
        "startTime": now,
        "conditions": ready,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
    }
    return pod, status


def tolerates(pod: Obj, taints: list[dict[str, str]]) -> bool:
    """Whether the DaemonSet's pod may run on a node with `taints` (NoSchedule/NoExecute)."""
    tolerations = pod["spec"].get("tolerations") or []

    def tolerated(taint: dict[str, str]) -> bool:
        for t in tolerations:
            if t.get("effect") not in (None, "", taint["effect"]):
                continue
            if t.get("operator") == "Exists" and t.get("key") in (None, "", taint["key"]):
                return True
            if t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
                return True
        return False

    return all(tolerated(t) for t in taints if t["effect"] in ("NoSchedule", "NoExecute"))


def endpoints_for(service: Obj, pods: list[Obj]) -> Obj:
    """The Endpoints the endpoints controller writes for `service` over Ready `pods`."""
    selector = service["spec"]["selector"]
    chosen = [p for p in pods if selector.items() <= p["metadata"]["labels"].items()]
    assert chosen, f"no pod matches Service {service['metadata']['name']}"
    ports = []
    for port in service["spec"]["ports"]:
        target = port.get("targetPort", port["port"])
        if isinstance(target, str):
            target = next(
                c["containerPort"]
                for container in chosen[0]["spec"]["containers"]
                for c in container.get("ports") or []
                if c.get("name") == target
            )
        ports.append({"name": port.get("name", ""), "port": target, "protocol": port.get("protocol", "TCP")})
    addresses = [
        {
            "ip": p["status"]["podIP"],
            "nodeName": p["spec"]["nodeName"],
            "targetRef": {
                "kind": "Pod",
                "namespace": p["metadata"]["namespace"],
                "name": p["metadata"]["name"],
                "uid": p["metadata"]["uid"],
            },
        }
        for p in chosen
    ]
    meta = service["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": dict(meta["labels"])},
        "subsets": [{"addresses": addresses, "ports": ports}],
    }


@dataclass
class Created:
    """What a scene created, to delete in reverse order (no controller would)."""

    kube: Kube
    objects: list[tuple[str, str, str, str | None]] = field(default_factory=list)

    def create(self, obj: Obj, status: Obj | None = None) -> Obj:
        meta = obj["metadata"]
        made = self.kube.create(obj)
        self.objects.append((obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")))
        if status is not None:
            made = self.kube.patch_status(
                obj["apiVersion"], obj["kind"], meta["name"], status, meta.get("namespace")
            )
        return made

    def node(self, plan: NodePlan) -> None:
        create_node(self.kube, plan)
        self.objects.append(("v1", "Node", plan.name, None))

    def namespace(self, name: str) -> None:
        if self.kube.get("v1", "Namespace", name) is None:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def delete_all(self) -> None:
        for api_version, kind, name, namespace in reversed(self.objects):
            self.kube.delete(api_version, kind, name, namespace)
        for api_version, kind, name, namespace in self.objects:
            if kind == "Namespace":
                _finalize(self.kube, name)
            self._wait_gone(api_version, kind, name, namespace)
        self.objects.clear()

    def _wait_gone(self, api_version: str, kind: str, name: str, namespace: str | None) -> None:
        gone = lambda: self.kube.get(api_version, kind, name, namespace) is None  # noqa: E731
        wait_for(gone, 60, f"{kind} {name} deleted")


def _finalize(kube: Kube, name: str) -> None:
    """The namespace controller's last step (there is none here): drop the finalizer."""
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}, "spec": {"finalizers": []}}
    try:
        kube.dynamic.request("put", f"/api/v1/namespaces/{name}/finalize", body=body)
    except Exception as err:  # already gone
        if "NotFound" not in type(err).__name__ and "404" not in str(err):
            raise


def gpu_pod(namespace: str, node: str, resource: str, gpus: int) -> tuple[Obj, Obj]:
    """One inference pod bound to `node`, Running, holding `gpus` GPUs."""
    name = f"serve-{node}"
    requests = {resource: str(gpus), "cpu": "4", "memory": str(32 << 30)}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "server",
                    "image": "registry.example/vllm:1",
                    "resources": {"requests": requests, "limits": {resource: str(gpus)}},
                }
            ],
        },
    }
    now = timestamp()
    status = {
        "phase": "Running",
        "startTime": now,
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
    }
    return pod, status


def daemonset_nodes(pod: Obj, plans: list[NodePlan]) -> Iterator[NodePlan]:
    """The nodes the DaemonSet's pod lands on: its nodeSelector matches, every taint tolerated."""
    selector = pod["spec"].get("nodeSelector") or {}
    for plan in plans:
        if selector.items() <= plan.labels.items() and tolerates(pod, plan.taints):
            yield plan
