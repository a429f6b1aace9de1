"""rendered/<env>/installers/{gpu-operator,kube-prometheus-stack}-values.yaml: what the
exporters' and the stack's installs must set so that, on a default install of the charts at
the versions generators/upstream/charts.py pins, Prometheus scrapes what the dashboards, rules, gate
and health queries read (docs/monitoring.md, "What the cluster must provide").

Decisions, each checked against the chart's templates by tests/monitoring/test_charts.py:
- Selection: nothing here changes what the stack's Prometheus selects. Its chart's default
  (`release: <release>`, every namespace) is what a stack someone else owns keeps, so every
  ServiceMonitor and PrometheusRule trainyard renders or configures carries that label
  (Monitoring.selection_labels): dcgm-exporter's through the operator's
  serviceMonitor.additionalLabels, Kueue's by rendering our own (its chart cannot label its
  own: kueue 0.19.2 templates/prometheus/monitor.yaml), the gate's, the health controller's.
- The release (monitoring.release): the default is the one trainyard's command installs; any
  other name is someone else's stack, which the command upgrades (never `--install`) and the
  header says what to merge into its values instead.
- The node name (item 3): node_exporter's ServiceMonitor relabels
  `__meta_kubernetes_pod_node_name` into monitoring.nodeExporterHostLabel (default
  `instance`, as kube-prometheus does), the label the queries take the node from
  (generators/model/promql.py, port_node). The chart's default relabelings are `[]`, so
  `instance` would be `<host IP>:9100`. The relabeling lives in the values file (not in code
  that rewrites the chart's output), so a live scrape that takes it from `helm template`
  follows it.
- The counters (item 7): the gpu-operator chart creates the counters ConfigMap from
  `dcgmExporter.config.{create,data}`, in the same release and before the ClusterPolicy, so
  the operator's subPath, non-optional mount finds it on the first install; their sha256 in
  `dcgmExporter.annotations` (copied onto the exporter's pod template) changes the
  DaemonSet's spec hash when they change, so the operator rolls the exporter (a subPath mount
  is never updated in place).
- Grafana (item 9): with sidecar delivery, the stack's Grafana sidecar selects the
  dashboards' label and files each into the folder its annotation names
  (`folderAnnotation` + `provider.foldersFromFilesStructure`; either alone leaves them in
  General).
"""

from __future__ import annotations

import hashlib
from typing import Any

from generators.components.monitoring import dcgm_counters
from generators.components.monitoring.promql import ksm_label
from generators.k8s.objects import Obj
from generators.layout import INSTALLERS, RENDERED
from generators.model.environment import Environment
from generators.output.templating import render
from generators.promql.reads import selectors
from generators.upstream import charts

GPU_OPERATOR_VALUES = "gpu-operator-values.yaml"  # rendered/<env>/installers/<this>
KUBE_PROMETHEUS_STACK_VALUES = "kube-prometheus-stack-values.yaml"
MOUNTSTATS_FLAG = "--collector.mountstats"
# On dcgm-exporter's pod template: the sha256 of the counters CSV it reads.
COUNTERS_SHA_ANNOTATION = "trainyard.dev/dcgm-counters-sha256"


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


def counters_sha256() -> str:
    return hashlib.sha256(dcgm_counters.csv_text().encode()).hexdigest()


def gpu_operator_values(env: Environment) -> Obj:
    m = env.monitoring
    values: Obj = render(
        "monitoring/gpu-operator-values.yaml.j2",
        config_map=m.dcgm_config_map,
        csv=dcgm_counters.csv_text(),
        image_tag=m.exporters.dcgm.image_tag,
        annotations={COUNTERS_SHA_ANNOTATION: counters_sha256()},
        service_monitor_labels=m.selection_labels,
    )
    return values


def node_exporter_args(env: Environment) -> list[str]:
    """extraArgs for prometheus-node-exporter, or none when the defaults do. A list value
    replaces the chart's whole list, so its defaults are repeated before our flag."""
    if not needs_mountstats(env):
        return []
    return [*env.monitoring.exporters.node_exporter.chart_extra_args, MOUNTSTATS_FLAG]


def grafana_sidecar(env: Environment) -> dict[str, str] | None:
    """The sidecar's label (it matches one: the first of sidecarLabels), value and folder
    annotation; None with grafana-operator delivery (nothing in the stack to set)."""
    d = env.monitoring.dashboards
    if d.delivery != "sidecar":
        return None
    label, value = sorted(d.sidecar_labels.items())[0]
    return {"label": label, "value": value, "annotation": d.sidecar_folder_annotation}


def kube_prometheus_stack_values(env: Environment) -> Obj:
    values: Obj = render(
        "monitoring/kube-prometheus-stack-values.yaml.j2",
        allowlist=[ksm_allowlist(env)],
        node_exporter_args=node_exporter_args(env),
        host_label=env.monitoring.node_exporter_host_label,
        sidecar=grafana_sidecar(env),
    )
    return values


def _gpu_header(env: Environment) -> str:
    m = env.monitoring
    dcgm = m.exporters.dcgm
    pinned = (
        f"pins the image {dcgm.image_tag} (monitoring.exporters.dcgmExporter)"
        if dcgm.image_tag
        else f"does not pin the image: the environment names dcgm-exporter {dcgm.release.version}, "
        "not an image tag"
    )
    chart = charts.GPU_OPERATOR
    return (
        f"Helm values for NVIDIA's gpu-operator chart {chart.version}, environment {env.name}: rendered\n"
        f"from {env.source_file} by generators/components/monitoring/; do not edit.\n"
        "Argo CD does not apply this folder. Install kube-prometheus-stack first (the operator\n"
        "creates dcgm-exporter's ServiceMonitor only when its CRD exists), then:\n"
        f"  {chart.command(m.dcgm_namespace, installer_path(env, GPU_OPERATOR_VALUES))}\n"
        f"The chart creates the counters ConfigMap {m.dcgm_config_map} (config.create, data) in\n"
        f"{m.dcgm_namespace} before the ClusterPolicy; their sha256 in annotations rolls the exporter\n"
        "when they change. honorLabels keeps the pod's namespace/pod (else they arrive as\n"
        f"exported_namespace/exported_pod).\nThis file {pinned}.\nSee docs/monitoring.md."
    )


def owned_elsewhere(env: Environment) -> bool:
    """The spec names a kube-prometheus-stack release other than the one trainyard's command
    installs: someone else's stack, which trainyard upgrades or merges into, never beside."""
    return env.monitoring.release != charts.KUBE_PROMETHEUS_STACK.release


# Values whose lists replace the release's own lists (Helm merges maps, not lists).
REPLACED_LISTS = (
    "kube-state-metrics.metricLabelsAllowlist",
    "prometheus-node-exporter.extraArgs",
    "prometheus-node-exporter.prometheus.monitor.relabelings",
)


def _kps_install(env: Environment) -> str:
    m = env.monitoring
    chart = charts.KUBE_PROMETHEUS_STACK
    command = chart.command(m.namespace, installer_path(env, KUBE_PROMETHEUS_STACK_VALUES), m.release)
    lists = "".join(f"\n    {name}" for name in REPLACED_LISTS)
    if not owned_elsewhere(env):
        return (
            "Argo CD does not apply this folder. Install it first (its CRDs come before the\n"
            "ServiceMonitors of the GPU operator and of trainyard):\n"
            f"  {command}\n"
            "These lists replace the release's own (Helm merges maps, not lists); a platform that\n"
            f"sets them merges its entries into ours:{lists}"
        )
    return (
        f"Argo CD does not apply this folder. The stack is release {m.release} in {m.namespace},\n"
        "installed by its owner (monitoring.release, monitoring.namespace); trainyard installs no\n"
        "second one. Upgrade that release with these values on top of its own, first:\n"
        f"  {command}\n"
        "(without --install: it fails, rather than installs a stack, if the release is not there).\n"
        f"--version moves {m.release} to the chart these values are checked against. If its owner\n"
        "keeps another version or passes values of their own, merge these keys into theirs\n"
        f"instead (helm get values {m.release} -n {m.namespace}). Lists replace theirs (Helm merges\n"
        f"maps, not lists), so append our entries to their lists:{lists}"
    )


def _kps_header(env: Environment) -> str:
    m = env.monitoring
    ne = m.exporters.node_exporter
    mountstats = (
        "prometheus-node-exporter.extraArgs adds --collector.mountstats (off by default; the\n"
        "checkpoint query reads node_mountstats_*). extraArgs replaces the chart's list, so its\n"
        f"defaults (kube-prometheus-stack {ne.chart}'s; node_exporter here: {ne.version}) are\n"
        "repeated first: compare them with your chart's values.yaml when you upgrade it."
        if needs_mountstats(env)
        else "The checkpoint query reads no node_mountstats_* series: node_exporter keeps its defaults."
    )
    chart = charts.KUBE_PROMETHEUS_STACK
    return (
        f"Helm values for the kube-prometheus-stack chart {chart.version}, environment {env.name}:\n"
        f"rendered from {env.source_file} by generators/components/monitoring/; do not edit.\n"
        f"{_kps_install(env)}\n"
        f"Its Prometheus selects release: {m.release} (the chart's default), which every\n"
        "ServiceMonitor and PrometheusRule trainyard renders or configures carries.\n"
        "node_exporter's ServiceMonitor copies the node name into\n"
        f"{m.node_exporter_host_label}, the label the queries join on.\n"
        "kube-state-metrics.metricLabelsAllowlist exports exactly the node label keys the pools\n"
        "use (as label_* on kube_node_labels); the chart's list is empty by default.\n"
        f"{mountstats}\nSee docs/monitoring.md."
    )


def installer_inputs(env: Environment) -> dict[str, tuple[str, Any]]:
    """file name under rendered/<env>/installers/ -> (header comment, document)."""
    return {
        GPU_OPERATOR_VALUES: (_gpu_header(env), gpu_operator_values(env)),
        KUBE_PROMETHEUS_STACK_VALUES: (_kps_header(env), kube_prometheus_stack_values(env)),
    }
