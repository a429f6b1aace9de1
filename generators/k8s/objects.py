"""Single objects several components render: a Namespace, a Service, a ConfigMap, a ServiceMonitor; and
`Obj`, the type of a rendered Kubernetes object (a plain mapping), for the whole tree."""

from __future__ import annotations

from typing import Any

from generators.output.templating import render

Obj = dict[str, Any]


def namespace(name: str, role: str) -> Obj:
    """A Namespace labelled with its role (infrastructure: trainyard's controllers; inference)."""
    return render("common/namespace.yaml.j2", name=name, role=role)


def service(name: str, namespace: str, port: int, port_name: str) -> Obj:
    """Service `name` in front of the pods labelled app.kubernetes.io/name=`name`: `port`, sent
    on to their container port called `port_name` (which the Service's port is named too)."""
    return render("common/service.yaml.j2", name=name, namespace=namespace, port=port, port_name=port_name)


def config_map(
    name: str,
    namespace: str,
    data: dict[str, str],
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> Obj:
    """ConfigMap `name` holding `data`; metadata.labels and .annotations only when given."""
    return render(
        "common/configmap.yaml.j2",
        name=name,
        namespace=namespace,
        data=data,
        labels=labels,
        annotations=annotations,
    )


def service_monitor(name: str, namespace: str, labels: dict[str, str]) -> Obj:
    """Prometheus (operator) scrapes Service `name`'s port `metrics`; `labels` match its
    serviceMonitorSelector."""
    return render("common/servicemonitor.yaml.j2", name=name, namespace=namespace, labels=labels)
