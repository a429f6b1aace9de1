"""NetworkPolicies: a namespace's default-deny ingress, and one allow for Prometheus."""

from __future__ import annotations

from typing import Any

from generators.k8s.objects import Obj
from generators.output.templating import render


def policy(
    name: str, namespace: str, pod_selector: dict[str, Any], ingress: list[dict[str, Any]] | None
) -> Obj:
    """Ingress-only NetworkPolicy `name`; `ingress` None: deny all ingress to the pods."""
    return render(
        "common/networkpolicy.yaml.j2",
        name=name,
        namespace=namespace,
        pod_selector=pod_selector,
        ingress=ingress,
    )


def default_deny(namespace: str) -> Obj:
    return policy("default-deny-ingress", namespace, {}, None)


def prometheus_ingress(
    name: str, namespace: str, pod_selector: dict[str, Any], monitoring_namespace: str, port: int
) -> Obj:
    """Prometheus (any pod of its namespace) may reach `port` of the selected pods."""
    peer = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": monitoring_namespace}}}
    ports = [{"protocol": "TCP", "port": port}]
    return policy(name, namespace, pod_selector, [{"from": [peer], "ports": ports}])
