"""rendered/<env>/monitoring/: dashboards, alert rules and the dcgm-exporter counters CSV.

- one dashboard per ConfigMap (Grafana sidecar) or per GrafanaDashboard (grafana-operator);
- the alert groups twice: a PrometheusRule, and a ConfigMap holding the same groups as a
  plain rules file (rendered/ holds only Kubernetes objects; promtool tests read that key);
- the counters CSV that turns on what dcgm-exporter's default lacks;
- installer inputs (rendered/<env>/installers/, never applied by Argo CD): the values the GPU
  operator and kube-prometheus-stack charts need so the exporters emit what the dashboards,
  rules and gate query read (the counters ConfigMap, honorLabels, the node-label allowlist,
  the mountstats collector). Decision: trainyard renders these as inputs and does not own
  those installs (no Argo CD Application for either chart): they carry many values that are
  no business of this repository, and two owners of one Helm release fight on every sync.
Dashboard JSON is dumped with sorted keys and no timestamps: same input, same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from generators import jsontext, yamlemit
from generators.components import Obj
from generators.components.monitoring import dashboards, dcgm_counters
from generators.components.monitoring.alerts import groups
from generators.components.monitoring.promql import GATE_JOB, ksm_label
from generators.layout import INSTALLERS, RENDERED
from generators.model.types import Environment
from generators.promql_ast import selectors
from generators.templating import render

RULES_NAME = "trainyard-alerts"
RULES_KEY = "trainyard-alerts.rules.yaml"
CONFIGMAP_LIMIT_BYTES = 1024 * 1024  # etcd refuses larger ConfigMaps


def dashboard_json(model: dict[str, Any]) -> str:
    return jsontext.dumps_sorted_indented(model) + "\n"  # json.dumps(sort_keys, indent=2), faster


def object_bytes(obj: Obj) -> int:
    """Size of the object as kubectl sends it (compact JSON)."""
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())


def _sized(obj: Obj) -> Obj:
    """Refuse an object etcd would refuse. (Large objects are applied server-side by the
    pipeline's one rule for every object: generators/syncoptions.py.)"""
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
            obj = render(
                "monitoring/dashboard-configmap.yaml.j2",
                name=uid,
                namespace=m.namespace,
                labels=dict(m.dashboards.sidecar_labels),
                key=f"{uid}.json",
                json=text,
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
        labels=dict(m.rule_labels),
        groups=rule_groups,
    )
    plain = render(
        "monitoring/rules-configmap.yaml.j2",
        name=f"{RULES_NAME}-rules-file",
        namespace=m.namespace,
        key=RULES_KEY,
        rules=yamlemit.dump({"groups": rule_groups}),
    )
    return [_sized(rule), _sized(plain)]


def scrape_objects(env: Environment) -> list[Obj]:
    """A ServiceMonitor for the overflow gate, whose metrics the overflow alerts and panels use."""
    if env.overflow is None:
        return []
    obj: Obj = render(
        "monitoring/servicemonitor.yaml.j2",
        name=GATE_JOB,
        namespace=env.overflow.namespace,
        labels=dict(env.monitoring.rule_labels),
    )
    return [obj]


def generate(env: Environment, earlier: Sequence[Obj] = ()) -> list[Obj]:
    m = env.monitoring
    counters: Obj = render(
        "monitoring/dcgm-counters.yaml.j2",
        name=m.dcgm_config_map,
        namespace=m.dcgm_namespace,
        key=dcgm_counters.CSV_KEY,
        csv=dcgm_counters.csv_text(),
    )
    return [counters, *dashboard_objects(env), *rule_objects(env), *scrape_objects(env)]


GPU_OPERATOR_VALUES = "gpu-operator-values.yaml"  # rendered/<env>/installers/<this>
KUBE_PROMETHEUS_STACK_VALUES = "kube-prometheus-stack-values.yaml"
DCGM_COLLECTORS_PATH = f"/etc/dcgm-exporter/{dcgm_counters.CSV_KEY}"  # where the operator mounts it
MOUNTSTATS_FLAG = "--collector.mountstats"


def installer_path(env: Environment, name: str) -> str:
    return f"{RENDERED}/{env.name}/{INSTALLERS}/{name}"


def node_label_keys(env: Environment) -> list[str]:
    """Every label key the pools' nodeLabels use, sorted: kube_node_labels must carry each
    (as label_<key>) for GPUMissing, KueueQuotaDrift and the gate's query to find a pool."""
    return sorted({key for pool in env.pools for key in pool.node_labels})


def ksm_allowlist(env: Environment) -> str:
    """kube-state-metrics' --metric-labels-allowlist entry for nodes."""
    return f"nodes=[{','.join(node_label_keys(env))}]"


def ksm_node_labels(env: Environment) -> dict[str, str]:
    """label_<sanitised key> -> key, for every key the allowlist must carry."""
    return {ksm_label(key): key for key in node_label_keys(env)}


def needs_mountstats(env: Environment) -> bool:
    """The checkpoint query reads node_exporter's mountstats collector, which is off by default."""
    checkpoint = selectors(env.monitoring.checkpoint_write_query)
    return any(s.name.startswith("node_mountstats_") for s in checkpoint)


def gpu_operator_values(env: Environment) -> Obj:
    m = env.monitoring
    values: Obj = render("monitoring/gpu-operator-values.yaml.j2", config_map=m.dcgm_config_map,
                         collectors=DCGM_COLLECTORS_PATH, image_tag=m.exporters.dcgm.image_tag)
    return values


def node_exporter_args(env: Environment) -> list[str]:
    """extraArgs for prometheus-node-exporter, or none when the defaults do. A list value
    replaces the chart's whole list, so its defaults are repeated before our flag."""
    if not needs_mountstats(env):
        return []
    return [*env.monitoring.exporters.node_exporter.chart_extra_args, MOUNTSTATS_FLAG]


def kube_prometheus_stack_values(env: Environment) -> Obj:
    values: Obj = render("monitoring/kube-prometheus-stack-values.yaml.j2",
                         allowlist=[ksm_allowlist(env)], node_exporter_args=node_exporter_args(env))
    return values


def installer_inputs(env: Environment) -> dict[str, tuple[str, Obj]]:
    """file name under rendered/<env>/installers/ -> (header comment, document)."""
    m, src = env.monitoring, env.source_file
    dcgm = m.exporters.dcgm
    pinned = (f"pins the image {dcgm.image_tag} (monitoring.exporters.dcgmExporter)" if dcgm.image_tag else
              f"does not pin the image: the environment names dcgm-exporter {dcgm.release.version}, "
              "not an image tag")
    gpu_header = (
        f"Helm values for NVIDIA's gpu-operator chart, environment {env.name}: rendered from\n"
        f"{src} by generators/components/monitoring/; do not edit.\n"
        "Argo CD does not apply this folder. Pass it with the values you install the operator\n"
        "with (last -f wins):\n"
        f"  helm upgrade gpu-operator nvidia/gpu-operator -n {m.dcgm_namespace} --reuse-values \\\n"
        f"    -f {installer_path(env, GPU_OPERATOR_VALUES)}\n"
        f"dcgm-exporter reads the rendered counters ConfigMap {m.dcgm_config_map} (it must be in\n"
        f"the operator's namespace, {m.dcgm_namespace}); honorLabels keeps the pod's namespace/pod\n"
        "(else they arrive as exported_namespace/exported_pod). env replaces the chart's list\n"
        f"(empty by default).\nThis file {pinned}.\nSee docs/monitoring.md."
    )
    ne = m.exporters.node_exporter
    mountstats = (
        "prometheus-node-exporter.extraArgs adds --collector.mountstats (off by default; the\n"
        "checkpoint query reads node_mountstats_*). extraArgs replaces the chart's list, so its\n"
        f"defaults (kube-prometheus-stack {ne.chart}, which ships node_exporter {ne.version}) are\n"
        "repeated first: compare them with your chart's values.yaml when you upgrade it."
        if needs_mountstats(env) else
        "The checkpoint query reads no node_mountstats_* series: node_exporter keeps its defaults."
    )
    kps_header = (
        f"Helm values for the kube-prometheus-stack chart, environment {env.name}: rendered from\n"
        f"{src} by generators/components/monitoring/; do not edit.\n"
        "Argo CD does not apply this folder. Pass it with the values you install the stack\n"
        "with (last -f wins):\n"
        f"  helm upgrade kube-prometheus-stack prometheus-community/kube-prometheus-stack \\\n"
        f"    -n {m.namespace} --reuse-values -f {installer_path(env, KUBE_PROMETHEUS_STACK_VALUES)}\n"
        "kube-state-metrics.metricLabelsAllowlist exports exactly the node label keys the pools\n"
        "use (as label_* on kube_node_labels); it replaces the chart's list (empty by default):\n"
        "add other resources' entries here if you need them.\n"
        f"{mountstats}\nSee docs/monitoring.md."
    )
    return {
        GPU_OPERATOR_VALUES: (gpu_header, gpu_operator_values(env)),
        KUBE_PROMETHEUS_STACK_VALUES: (kps_header, kube_prometheus_stack_values(env)),
    }
