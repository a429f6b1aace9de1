"""The workloads scenes create, and what Kueue made of them: one home for the training Job
through a team's LocalQueue (bad-node, gang-placement, day-in-the-life submit it; the box
tests read its Workload and pods), so a change of how a scene asks Kueue for GPUs is made
once (the three scenes' Job builders were near-copies before it).

Every object a scene creates carries SCENE_LABEL (its name, or the scene's), so its pods
are selected by it and a leftover of an interrupted scene is found by it.
"""

from __future__ import annotations

from typing import Any

from box.kube import Kube, Obj
from generators.model.types import Pool

KUEUE_API = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
SCENE_LABEL = "trainyard.dev/box-scene"
RUN_FOR = "trainyard.dev/box-run-for"  # the box's pod-complete Stage holds a Job pod Running this long
TRAINER_IMAGE = "registry.example/trainer:1"


def scene_object(api_version: str, kind: str, name: str, namespace: str, spec: Obj, **labels: str) -> Obj:
    """A namespaced object labelled SCENE_LABEL=`name`, plus `labels` (a label key is not a
    Python name, so they come as a mapping: `**{QUEUE_LABEL: queue}`)."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "labels": {**labels, SCENE_LABEL: name}},
        "spec": spec,
    }


def pool_tolerations(pool: Pool) -> list[Obj]:
    """Tolerations of every taint the pool's nodes carry (a pod not sent through Kueue gets
    none from a ResourceFlavor)."""
    return [
        {"key": t.key, "operator": "Equal", "value": t.value or "", "effect": t.effect} for t in pool.taints
    ]


def gpu_container(
    pool: Pool, image: str, gpus: int, name: str = "main", cpu: str = "1", memory: str = "1Gi"
) -> Obj:
    """A container asking for `gpus` of the pool's GPU resource (requests = limits, as the
    device plugin requires)."""
    count = {pool.gpu_resource: str(gpus)}
    return {
        "name": name,
        "image": image,
        "resources": {"requests": {**count, "cpu": cpu, "memory": memory}, "limits": count},
    }


def training_job(
    name: str,
    namespace: str,
    queue: str,
    tier: str | None,
    pods: int,
    pod_spec: Obj,
    *,
    indexed: bool = False,
    run_for: str | None = None,
) -> Obj:
    """A suspended Job of `pods` pods (one gang: parallelism = completions) through LocalQueue
    `queue`, at PriorityClass `tier` (None: the Job names no class, the rendered policy picks
    one). `run_for` (e.g. "1h") is the annotation the box's pod-complete Stage reads to hold
    each pod Running that long; without it KWOK completes the pods at once."""
    labels = {QUEUE_LABEL: queue, **({PRIORITY_LABEL: tier} if tier else {})}
    template: dict[str, Any] = {"labels": {SCENE_LABEL: name}}
    if run_for:
        template["annotations"] = {RUN_FOR: run_for}
    spec = {**pod_spec, "restartPolicy": "Never", **({"priorityClassName": tier} if tier else {})}
    job_spec: Obj = {"suspend": True, "parallelism": pods, "completions": pods}
    if indexed:
        job_spec["completionMode"] = "Indexed"
    job_spec["template"] = {"metadata": template, "spec": spec}
    return scene_object("batch/v1", "Job", name, namespace, job_spec, **labels)


def workload_of(kube: Kube, job: Obj) -> Obj | None:
    """The Workload Kueue created for `job` (owned by it), if any yet."""
    uid = job["metadata"]["uid"]
    for workload in kube.list(KUEUE_API, "Workload", job["metadata"]["namespace"]):
        if any(o.get("uid") == uid for o in workload["metadata"].get("ownerReferences") or []):
            return workload
    return None


def job_pods(kube: Kube, job: Obj) -> list[Obj]:
    """The pods the job controller made for `job` (its controller-uid label)."""
    selector = f"batch.kubernetes.io/controller-uid={job['metadata']['uid']}"
    return kube.list("v1", "Pod", job["metadata"]["namespace"], label_selector=selector)
