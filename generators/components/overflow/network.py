"""The overflow namespace's NetworkPolicies."""

from __future__ import annotations

from typing import Any

from generators.components.overflow.descheduler import DESCHEDULER, DESCHEDULER_METRICS_PORT
from generators.k8s import network
from generators.k8s.objects import Obj
from generators.model.overflow import GATE, NODE_PREFIX, Overflow
from generators.providers.contract import KUBELET_PORT


def network_policies(ov: Overflow, monitoring_namespace: str) -> list[Obj]:
    """Default-deny ingress in the overflow namespace, then exactly what must reach it:
    Prometheus to the metrics ports, and the API server to the virtual-kubelets' kubelet API.

    The kubelet API (logs of spilled pods; exec and attach where the provider serves them)
    is called by the kube-apiserver, which is not a pod: no namespace or pod selector
    matches it, so only ipBlocks can (`kubeletApiSourceCidrs`, the addresses its connections
    come from). interLink 0.6.1 authenticates no caller on that port (docs/overflow.md), so
    with the list empty nobody is admitted (spilled pods run; `kubectl logs` on them fails),
    never everybody. Egress is not restricted: the gate reaches Prometheus and the API
    server, each provider its own API, addresses the repository does not know."""

    def app(name: str) -> dict[str, Any]:
        key = "app.kubernetes.io/instance" if name.startswith(NODE_PREFIX) else "app.kubernetes.io/name"
        return {"matchLabels": {key: name}}

    scrape = [(GATE, ov.gate.metrics_port), (DESCHEDULER, DESCHEDULER_METRICS_PORT)]
    scrape += [(p.node_name, p.contract.metrics_port) for p in ov.providers if p.contract.metrics_port]
    objects = [network.default_deny(ov.namespace)]
    for name, port in scrape:
        objects.append(
            network.prometheus_ingress(f"{name}-metrics", ov.namespace, app(name), monitoring_namespace, port)
        )
    if ov.kubelet_api_source_cidrs:
        api_server = [{"ipBlock": {"cidr": cidr}} for cidr in ov.kubelet_api_source_cidrs]
        kubelet_api = [{"from": api_server, "ports": [{"protocol": "TCP", "port": KUBELET_PORT}]}]
        objects.append(
            network.policy("virtual-kubelet-api", ov.namespace, app("virtual-kubelet"), kubelet_api)
        )
    return objects
