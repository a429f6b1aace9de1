"""Scene inference-scales: inference scales under load through what the
project renders for External metrics, and the scaled pods that do not fit spill.

What the scene writes, as a user and their workload would:
- the first declared inference service's Deployment (`overflow.inference[0]`), its pod
  template spec being the documented snippet (docs/overflow.md, "The inference pod snippet",
  `inference_pod_snippet`) plus one container asking for a whole node of the inference
  pool's GPUs (a model served tensor-parallel over the node), so the pool holds one replica
  per node and the HPA can ask for more than fit;
- the load series: SYNTHETIC. The HPA's metric (its name, the Deployment's namespace and the
  HPA's selector labels) served by a tiny exporter (box/series.py) that the box's
  Prometheus scrapes (file_sd, box/monitoring.py), first at 0, then at
  `target x averageValue`, where target = min(maxReplicas, replicas the in-cluster pool
  holds + replicas the providers' advertised GPUs hold).

What it reads back, all written by the real controllers: the value the rendered
prometheus-adapter serves through the kube-apiserver's aggregator
(/apis/external.metrics.k8s.io/v1beta1/...), the rendered HPA's status (ScalingActive,
desiredReplicas, the current metric) as kube-controller-manager's HPA controller writes it,
the Deployment's and its ReplicaSet's replicas, and where kube-scheduler bound each pod
(in-cluster, or vk-<provider> once the gate controller opened it). It passes when the HPA
asked for `target`, the ReplicaSet made them, the pool holds one per node and the rest run
on the virtual nodes. It removes the Deployment and the exporter's target at the end.
It expects the inference pool's GPUs free when it starts (a fresh box): a training job
borrowing them would leave fewer in-cluster replicas than the pool's node count.
"""

from __future__ import annotations

import time
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from box import monitoring
from box.kube import Kube, Obj, condition, wait_for
from box.scenes.workloads import SCENE_LABEL
from box.series import SyntheticSeries, write_target
from generators.components.overflow.inference import inference_pod_snippet
from generators.model import quantity
from generators.model.environment import Environment
from generators.model.overflow import InferenceService, inference_pools
from generators.model.types import Pool

ADAPTER_SECONDS = 180  # the adapter lists series every --metrics-relist-interval (1m)
HPA_SECONDS = 180  # HPA sync period 15 s, a few scale-up steps
SPILL_SECONDS = 300  # the gate's openAfterSeconds and reconcile interval, then the scheduler


@dataclass
class InferenceScales:
    service: str  # namespace/deployment
    metric: str
    per_replica_gpus: int
    in_cluster: int  # replicas the inference pool holds (one per node)
    spill_capacity: int  # replicas the providers' GPUs hold
    target: int
    load: float
    served_before: str = ""  # the adapter's value through the aggregator, before the load
    served_after: str = ""
    hpa_desired: int = 0
    hpa_current_metric: str = ""
    deployment_replicas: int = 0
    replicaset_replicas: int = 0
    in_cluster_bound: int = 0
    virtual_bound: dict[str, int] = field(default_factory=dict)
    pending: int = 0
    rescales: list[str] = field(default_factory=list)  # the HPA controller's SuccessfulRescale events
    open_gates: list[str] = field(default_factory=list)  # virtual nodes without the gate taint
    seconds_to_scale: float = 0.0
    seconds_to_spill: float = 0.0
    notes: list[str] = field(default_factory=list)  # why it cannot pass (a timeout, a shape)
    gate_taint: str = ""

    @property
    def expected_spill(self) -> int:
        return self.target - min(self.target, self.in_cluster)

    @property
    def ok(self) -> bool:
        return (
            self.target > self.in_cluster
            and self.hpa_desired == self.target
            and self.deployment_replicas == self.target
            and self.replicaset_replicas == self.target
            and self.in_cluster_bound == self.in_cluster
            and sum(self.virtual_bound.values()) == self.expected_spill
            and self.pending == 0
            and not self.notes
        )

    def lines(self) -> list[str]:
        spilled = ", ".join(f"{n}: {c}" for n, c in sorted(self.virtual_bound.items())) or "none"
        return [
            f"{self.service}: {self.per_replica_gpus} GPUs per replica; the pool holds {self.in_cluster}, "
            f"the providers {self.spill_capacity}",
            f"adapter via the aggregator: {self.metric} = {self.served_before} at rest, "
            f"{self.served_after} under load (synthetic load {self.load:g})",
            f"HPA desiredReplicas {self.hpa_desired} (wanted {self.target}), current metric "
            f"{self.hpa_current_metric} per replica, {self.seconds_to_scale:.0f} s after the load"
            + ("  OK" if self.hpa_desired == self.target else "  DID NOT SCALE"),
            f"HPA controller events: {'; '.join(self.rescales) or 'no rescale'}",
            f"Deployment replicas {self.deployment_replicas}, ReplicaSet replicas {self.replicaset_replicas}",
            f"gates open (no {self.gate_taint} taint): {', '.join(self.open_gates) or 'none'}",
            f"pods: {self.in_cluster_bound} in-cluster, spilled {spilled}, {self.pending} pending; "
            f"{self.seconds_to_spill:.0f} s from load to the last spilled pod bound"
            + ("  OK" if self.ok else "  NOT AS PROMISED"),
            *self.notes,
        ]


def _service(env: Environment) -> InferenceService:
    if env.overflow is None or not env.overflow.inference:
        raise ValueError(
            f"{env.name} declares no overflow.inference service: the inference-scales scene needs one"
        )
    return env.overflow.inference[0]


def service_deployment(env: Environment, svc: InferenceService, pool: Pool, run: str) -> Obj:
    assert env.overflow is not None
    spec: dict[str, Any] = inference_pod_snippet(env.overflow, svc)
    # The pool's own taints, as a pod meant for it tolerates them (docs/overflow.md).
    spec["tolerations"] = [
        *spec["tolerations"],
        *(
            {"key": t.key, "operator": "Equal", "value": t.value or "", "effect": t.effect}
            for t in pool.taints
        ),
    ]
    gpus = str(pool.gpus_per_node)
    spec["containers"] = [
        {
            "name": "serve",
            "image": "registry.example/vllm:1",
            "resources": {
                "requests": {pool.gpu_resource: gpus, "cpu": "1", "memory": "1Gi"},
                "limits": {pool.gpu_resource: gpus},
            },
        }
    ]
    labels = {**svc.pod_selector, SCENE_LABEL: run}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": svc.deployment, "namespace": svc.namespace, "labels": {SCENE_LABEL: run}},
        "spec": {
            "replicas": svc.min_replicas,
            "selector": {"matchLabels": dict(svc.pod_selector)},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def adapter_serves(kube: Kube, svc: InferenceService) -> str | None:
    """The value the aggregator returns for the HPA's request (None: not served yet)."""
    selector = ",".join(f"{k}={v}" for k, v in sorted(svc.metric_selector.items()))
    path = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{svc.namespace}/{svc.metric_name}"
    if selector:
        path += "?" + urllib.parse.urlencode({"labelSelector": selector})
    try:
        body = kube.raw_get(path)
    except Exception:  # 404 until the adapter has listed the series; 503 while it starts
        return None
    items = body.get("items") or []
    return str(items[0]["value"]) if items else None


def read_hpa(kube: Kube, svc: InferenceService) -> Obj | None:
    return kube.get("autoscaling/v2", "HorizontalPodAutoscaler", svc.deployment, svc.namespace)


def _pods(kube: Kube, svc: InferenceService) -> list[Obj]:
    selector = ",".join(f"{k}={v}" for k, v in sorted(svc.pod_selector.items()))
    return [
        p
        for p in kube.list("v1", "Pod", svc.namespace, label_selector=selector)
        if not p["metadata"].get("deletionTimestamp")
    ]


def inference_scales(
    kube: Kube, env: Environment, box_folder: Path, say: Callable[[str], None] = lambda _: None
) -> InferenceScales:
    """Run the scene (module docstring) and clean up after it; `say` gets progress lines."""
    svc = _service(env)
    assert env.overflow is not None
    pools = inference_pools(env.pools)
    pool = pools[0]
    per_replica = pool.gpus_per_node
    in_cluster = sum(p.nodes for p in pools if p.gpus_per_node >= per_replica)
    spill_capacity = sum(p.gpus // per_replica for p in env.overflow.providers)
    target = min(svc.max_replicas, in_cluster + spill_capacity)
    average = float(quantity.parse(svc.metric_average_value).value)
    result = InferenceScales(
        service=f"{svc.namespace}/{svc.deployment}",
        metric=svc.metric_name,
        per_replica_gpus=per_replica,
        in_cluster=in_cluster,
        spill_capacity=spill_capacity,
        target=target,
        load=target * average,
    )
    if target <= in_cluster:
        result.notes.append(
            f"maxReplicas {svc.max_replicas} fits in the pool: nothing can spill from load alone"
        )
    run = uuid.uuid4().hex[:6]
    labels = {"namespace": svc.namespace, **svc.metric_selector}
    series = SyntheticSeries().start()
    series.set(svc.metric_name, labels, 0)
    targets = monitoring.scene_targets(box_folder)
    target_file = write_target(targets, f"inference-scales-{run}", series.target)
    created = False
    try:
        say(
            f"creating Deployment {svc.namespace}/{svc.deployment} ({svc.min_replicas} replicas), "
            f"synthetic {svc.metric_name} = 0"
        )
        since = str(kube.create(service_deployment(env, svc, pool, run))["metadata"]["creationTimestamp"])
        created = True
        try:
            _scale_and_spill(kube, svc, series, labels, result, say)
        except AssertionError as err:  # a controller did not act: report what they did, fail
            result.notes.append(str(err))
        hpa = read_hpa(kube, svc) or {}
        result.hpa_desired = int((hpa.get("status") or {}).get("desiredReplicas", 0))
        result.hpa_current_metric = _current_metric(hpa)
        result.rescales = [e.get("message", "").split(";")[0] for e in _events(kube, svc, since)]
        result.gate_taint = env.overflow.gate.taint_key
        for name in env.overflow.virtual_nodes:
            node = kube.get("v1", "Node", name) or {}
            taints = (node.get("spec") or {}).get("taints") or []
            if not any(t.get("key") == result.gate_taint for t in taints):
                result.open_gates.append(name)
        deployment = kube.get("apps/v1", "Deployment", svc.deployment, svc.namespace) or {}
        result.deployment_replicas = int((deployment.get("status") or {}).get("replicas", 0))
        uid = (deployment.get("metadata") or {}).get("uid")
        for replicaset in kube.list("apps/v1", "ReplicaSet", svc.namespace):
            if any(o.get("uid") == uid for o in replicaset["metadata"].get("ownerReferences") or []):
                result.replicaset_replicas += int((replicaset.get("status") or {}).get("replicas", 0))
        virtual = set(env.overflow.virtual_nodes)
        for pod in _pods(kube, svc):
            node = pod["spec"].get("nodeName")
            if not node:
                result.pending += 1
            elif node in virtual:
                result.virtual_bound[node] = result.virtual_bound.get(node, 0) + 1
            else:
                result.in_cluster_bound += 1
        return result
    finally:
        if created:
            kube.delete("apps/v1", "Deployment", svc.deployment, svc.namespace)
        target_file.unlink(missing_ok=True)
        series.stop()


def _scale_and_spill(
    kube: Kube,
    svc: InferenceService,
    series: SyntheticSeries,
    labels: dict[str, str],
    result: InferenceScales,
    say: Callable[[str], None],
) -> None:
    """Wait for the adapter and the HPA at rest, raise the load, wait for the HPA to ask for
    `result.target` and the scheduler to bind that many pods (AssertionError when one does not)."""
    target = result.target
    serving = f"the adapter serving {svc.metric_name} through the aggregator"
    result.served_before = wait_for(lambda: adapter_serves(kube, svc), ADAPTER_SECONDS, serving, 1.0)
    wait_for(
        lambda: scaling_active(read_hpa(kube, svc)),
        HPA_SECONDS,
        "the HPA controller reading the metric (ScalingActive)",
        1.0,
    )
    say(f"the HPA reads the metric; synthetic load {result.load:g} (for {target} replicas)")
    series.set(svc.metric_name, labels, result.load)
    loaded = time.monotonic()
    wait_for(
        lambda: adapter_serves(kube, svc) not in (None, result.served_before),
        ADAPTER_SECONDS,
        "the adapter serving the load",
        1.0,
    )
    result.served_after = adapter_serves(kube, svc) or ""
    wait_for(
        lambda: _desired(read_hpa(kube, svc), target),
        HPA_SECONDS,
        f"the HPA asking for {target} replicas",
        1.0,
    )
    result.seconds_to_scale = time.monotonic() - loaded

    def placed() -> list[Obj] | None:
        pods = _pods(kube, svc)
        bound = [p for p in pods if p["spec"].get("nodeName")]
        return pods if len(pods) >= target and len(bound) >= target else None

    say(
        f"the HPA asked for {target}; waiting for the scheduler to bind them (the gate opens "
        "once the pool is full)"
    )
    wait_for(placed, SPILL_SECONDS, f"{target} pods bound (the rest spilled)", 1.0)
    result.seconds_to_spill = time.monotonic() - loaded


def _events(kube: Kube, svc: InferenceService, since: str) -> list[Obj]:
    """The HPA's SuccessfulRescale events (from the HPA controller) since `since` (RFC 3339:
    earlier runs of the scene left theirs), oldest first."""
    found = [
        e
        for e in kube.list("v1", "Event", svc.namespace)
        if (e.get("involvedObject") or {}).get("kind") == "HorizontalPodAutoscaler"
        and (e.get("involvedObject") or {}).get("name") == svc.deployment
        and e.get("reason") == "SuccessfulRescale"
        and _stamp(e) >= since
    ]
    return sorted(found, key=_stamp)


def _stamp(event: Obj) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or "")


def scaling_active(hpa: Obj | None) -> Obj | None:
    found = condition(hpa, "ScalingActive")
    return hpa if found is not None and found.get("status") == "True" else None


def _desired(hpa: Obj | None, target: int) -> Obj | None:
    status = (hpa or {}).get("status") or {}
    return hpa if status.get("desiredReplicas") == target else None


def _current_metric(hpa: Obj) -> str:
    for metric in (hpa.get("status") or {}).get("currentMetrics") or []:
        current = (metric.get("external") or {}).get("current") or {}
        if current:
            return str(current.get("averageValue") or current.get("value"))
    return "?"
