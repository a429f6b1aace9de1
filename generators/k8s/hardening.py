"""What every Deployment of trainyard's own machinery shares: a non-root, read-only,
capability-free security context, its requests and limits, a priority class nothing outranks."""

from __future__ import annotations

from typing import Any

from generators.model.types import Resources

NON_ROOT_UID = 65532  # the distroless "nonroot" user; the gate image uses it too
# The virtual-kubelets, the gate, the descheduler and the health controller must never be
# preempted or evicted: a preempted virtual-kubelet leaves its node unreachable, and 300 s
# later the node lifecycle controller's NoExecute taint evicts every spilled pod at once; a
# preempted health controller leaves quarantines unattended. Kubernetes' built-in class
# (2000000000) outranks every tier, is honoured in any namespace (checked on the real
# kube-apiserver: tests/controlplane/test_descheduler.py), and the descheduler's
# SystemCriticalPods protection never evicts it.
MACHINERY_PRIORITY_CLASS = "system-cluster-critical"


def pod_security(uid: int = NON_ROOT_UID) -> dict[str, Any]:
    """Non-root as the image's user `uid` (user and group), the runtime's seccomp profile."""
    return {
        "runAsNonRoot": True,
        "runAsUser": uid,
        "runAsGroup": uid,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


POD_SECURITY = pod_security()
CONTAINER_SECURITY: dict[str, Any] = {
    "allowPrivilegeEscalation": False,
    "privileged": False,
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def hardened(res: Resources) -> dict[str, Any]:
    """Template values every Deployment here shares: its requests and limits, the security
    contexts, the machinery's priority class."""
    resources = {
        "requests": {"cpu": res.cpu_request, "memory": res.memory_request},
        "limits": {"cpu": res.cpu_limit, "memory": res.memory_limit},
    }
    return {
        "resources": resources,
        "pod_security": POD_SECURITY,
        "container_security": CONTAINER_SECURITY,
        "priority_class": MACHINERY_PRIORITY_CLASS,
    }
