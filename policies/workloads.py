"""The controllers we deploy (gate, exporters, jobs) run hardened and sized.

Per container of every pod template in Deployments, DaemonSets, StatefulSets, Jobs and
CronJobs: runAsNonRoot (container or pod level, and no runAsUser 0), no privilege
escalation, not privileged, a read-only root filesystem, cpu and memory requests, a memory
limit, and an image pinned to a tag other than latest or to a digest. CPU limits are not
required: throttling a controller hurts more than letting it use idle CPU.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from policies.context import Context, Finding
from policies.walk import containers, pod_specs, show

ID = "workloads"
RATIONALE = (
    "a compromised or leaking controller on a shared GPU cluster must not gain root, "
    "write its image, starve neighbours or change code under a moving tag"
)
SEVERITY = "error"
WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet", "Job", "CronJob")


def check(ctx: Context) -> Iterable[Finding]:
    for item in ctx.of_kind(*WORKLOAD_KINDS):
        for path, pod in pod_specs(item.tree):
            pod_context: Mapping[str, Any] = pod.get("securityContext") or {}
            for where, container in containers(pod):
                prefix = f"{show(path)}.{where}"
                name = container.get("name", "?")
                for problem in _problems(pod_context, container):
                    yield item.finding(f"{prefix} ({name}): {problem}")


def _problems(pod_context: Mapping[str, Any], container: Mapping[str, Any]) -> Iterator[str]:
    own: Mapping[str, Any] = container.get("securityContext") or {}

    def effective(key: str) -> Any:
        return own.get(key, pod_context.get(key))

    if effective("runAsNonRoot") is not True:
        yield "securityContext.runAsNonRoot must be true"
    if effective("runAsUser") == 0:
        yield "securityContext.runAsUser 0 is root"
    if own.get("allowPrivilegeEscalation") is not False:
        yield "securityContext.allowPrivilegeEscalation must be false"
    if own.get("privileged") is True:
        yield "securityContext.privileged must not be true"
    if own.get("readOnlyRootFilesystem") is not True:
        yield "securityContext.readOnlyRootFilesystem must be true (mount an emptyDir for scratch)"
    yield from _resources(container.get("resources") or {})
    yield from _image(container.get("image"))


def _resources(resources: Mapping[str, Any]) -> Iterator[str]:
    requests: Mapping[str, Any] = resources.get("requests") or {}
    limits: Mapping[str, Any] = resources.get("limits") or {}
    missing = [f"requests.{r}" for r in ("cpu", "memory") if r not in requests]
    missing += ["limits.memory"] if "memory" not in limits else []
    if missing:
        yield f"resources need {', '.join(missing)}"


def _image(image: Any) -> Iterator[str]:
    if not isinstance(image, str) or not image:
        yield "no image"
        return
    if "@sha256:" in image:
        return  # a digest pins the bytes whatever the tag says
    last = image.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else None
    if tag is None:
        yield f"image {image!r} has no tag and pulls :latest; pin a version tag or digest"
    elif tag == "latest":
        yield f"image {image!r} uses :latest; pin a version tag or digest"
