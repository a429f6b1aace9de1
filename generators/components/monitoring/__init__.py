"""rendered/<env>/monitoring/: dashboards, alert rules and the dcgm-exporter counters CSV.

- one dashboard per ConfigMap (Grafana sidecar) or per GrafanaDashboard (grafana-operator);
- the alert groups twice: a PrometheusRule, and a ConfigMap holding the same groups as a
  plain rules file (rendered/ holds only Kubernetes objects; promtool tests read that key);
- installer inputs (rendered/<env>/installers/, never applied by Argo CD; installers.py): the
  values the GPU operator and kube-prometheus-stack charts need so the exporters emit, and
  Prometheus scrapes, what the dashboards, rules and gate query read (the counters CSV that
  turns on what dcgm-exporter's default lacks, honorLabels, the selectors, the node-name
  relabeling, the node-label allowlist, the mountstats collector, Grafana's folders).
  Decision: trainyard renders these as inputs and does not own those installs (no Argo CD
  Application for either chart): they carry many values that are no business of this
  repository, and two owners of one Helm release fight on every sync.
- prometheus-adapter (adapter.py), serving the External metrics the overflow HPAs name,
  for environments that declare inference services: no chart is pinned for it, and its
  config is derived from the spec, so trainyard renders and owns its objects.
Dashboard JSON is dumped with sorted keys and no timestamps: same input, same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from generators.components.monitoring import adapter, dashboards, installers
from generators.components.monitoring.alerts import groups
from generators.components.monitoring.promql import GATE_JOB
from generators.k8s.objects import Obj, config_map, service_monitor
from generators.model.environment import Environment
from generators.output import yamlemit
from generators.output.templating import render
from generators.upstream import charts

# What other modules (doctor, tests) name the installer inputs by.
GPU_OPERATOR_VALUES = installers.GPU_OPERATOR_VALUES
KUBE_PROMETHEUS_STACK_VALUES = installers.KUBE_PROMETHEUS_STACK_VALUES
installer_path = installers.installer_path
ksm_allowlist = installers.ksm_allowlist
ksm_node_labels = installers.ksm_node_labels
kube_prometheus_stack_values = installers.kube_prometheus_stack_values
node_label_keys = installers.node_label_keys
installer_inputs = installers.installer_inputs

RULES_NAME = "trainyard-alerts"
# Not the chart's name for its own (kueue-controller-manager-metrics-monitor): a helm upgrade
# that turns the chart's off deletes the object of that name, whoever applied it last.
KUEUE_MONITOR = "trainyard-kueue-metrics"
KUEUE_HELM = "helmValues"  # kueue.configurationDelivery: Kueue installed by its chart
RULES_KEY = "trainyard-alerts.rules.yaml"
CONFIGMAP_LIMIT_BYTES = 1024 * 1024  # etcd refuses larger ConfigMaps


def dashboard_json(model: dict[str, Any]) -> str:
    # The standard library's: a hand-written encoder saved ~1.3 ms per environment (docs/performance.md)
    return json.dumps(model, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def object_bytes(obj: Obj) -> int:
    """Size of the object as kubectl sends it (compact JSON)."""
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())


def _sized(obj: Obj) -> Obj:
    """Refuse an object etcd would refuse. (Large objects are applied server-side by the
    pipeline's one rule for every object: generators/gitops/syncoptions.py.)"""
    size = object_bytes(obj)
    if size > CONFIGMAP_LIMIT_BYTES:
        raise ValueError(f"{obj['kind']} {obj['metadata']['name']} is {size} bytes, over the 1 MiB limit")
    return obj


def dashboard_objects(env: Environment) -> list[Obj]:
    m = env.monitoring
    objects = []
    for slug, build in dashboards.builders(env):
        uid = m.dashboard_uid(slug)
        text = dashboard_json(build(env))
        if m.dashboards.delivery == "sidecar":
            # One dashboard per ConfigMap, picked up by the Grafana sidecar (kube-prometheus-stack).
            obj = config_map(
                uid,
                m.namespace,
                {f"{uid}.json": text},
                labels=dict(m.dashboards.sidecar_labels),
                annotations={m.dashboards.sidecar_folder_annotation: m.dashboards.folder},
            )
        else:
            obj = render(
                "monitoring/grafanadashboard.yaml.j2",
                name=uid,
                namespace=m.namespace,
                instance_labels=dict(m.dashboards.instance_selector),
                folder=m.dashboards.folder,
                uid=uid,
                json=text,
            )
        objects.append(_sized(obj))
    return objects


def rule_objects(env: Environment) -> list[Obj]:
    m = env.monitoring
    rule_groups = groups(env)
    rule = render(
        "monitoring/prometheusrule.yaml.j2",
        name=RULES_NAME,
        namespace=m.namespace,
        labels=m.selection_labels,
        groups=rule_groups,
    )
    # The same rule groups as a plain Prometheus rules file: for Prometheus without the
    # operator (mount it and list it in rule_files) and for promtool.
    plain = config_map(
        f"{RULES_NAME}-rules-file", m.namespace, {RULES_KEY: yamlemit.dump({"groups": rule_groups})}
    )
    return [_sized(rule), _sized(plain)]


def kueue_service_monitor(env: Environment) -> Obj:
    """Kueue's controller metrics, scraped through the Service its chart renders (release
    charts.KUEUE.release: app.kubernetes.io/name is the chart's name, instance the release)."""
    return render(
        "monitoring/kueue-servicemonitor.yaml.j2",
        name=KUEUE_MONITOR,
        namespace=env.kueue.namespace,
        labels=env.monitoring.selection_labels,
        service_labels={
            "app.kubernetes.io/component": "metrics-service",
            "app.kubernetes.io/instance": charts.KUEUE.release,
            "app.kubernetes.io/name": charts.KUEUE.name,
        },
    )


def scrape_objects(env: Environment) -> list[Obj]:
    """ServiceMonitors: Kueue's controller (when its chart installs Kueue: the Service this
    selects is the chart's), and the overflow gate, whose metrics the overflow alerts and
    panels use."""
    kueue = [kueue_service_monitor(env)] if env.kueue.configuration_delivery == KUEUE_HELM else []
    if env.overflow is None:
        return kueue
    return [*kueue, service_monitor(GATE_JOB, env.overflow.namespace, env.monitoring.selection_labels)]


def generate(env: Environment, earlier: Sequence[Obj] = ()) -> list[Obj]:
    # The dcgm-exporter counters ConfigMap is not among them: the gpu-operator chart creates it
    # from the rendered values (installers.py), before the operator mounts it.
    return [*dashboard_objects(env), *rule_objects(env), *scrape_objects(env), *adapter.generate(env)]
