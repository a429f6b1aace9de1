"""The `monitoring` section: selectors, label names, thresholds (schemas/monitoring.schema.json).

Like a monitoring mixin's config: dashboards and alert rules read only this and the pools
(expected GPUs per node), so one number in the environment file moves every panel
threshold and alert that depends on it. Fields map onto the schema by fromspec.py's rule:
a new threshold is a schema property and a field here, nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from generators.model.exporters import Exporters, build_exporters
from generators.model.fromspec import setting

Delivery = Literal["sidecar", "grafana-operator"]
# The monitoring stacks the spec can name; generators/model/checks/monitoring.py refuses the
# ones trainyard cannot render a working setup for (docs/monitoring.md).
Stack = Literal["kube-prometheus-stack", "kube-prometheus"]
ExternalMetricsAdapter = Literal["prometheus-adapter", "none"]

# Grafana accepts dashboard UIDs of at most 40 characters (grafana-operator's CRD says so too).
MAX_DASHBOARD_UID = 40


@dataclass(frozen=True)
class Selectors:
    """PromQL label matchers (no braces) per exporter."""

    dcgm: str
    node_exporter: str
    kube_state_metrics: str
    kueue: str

    def by_exporter(self) -> dict[str, str]:
        """Exporter name -> matchers, in a fixed order (used by the exporter-down alerts)."""
        return {
            "dcgm-exporter": self.dcgm,
            "node-exporter": self.node_exporter,
            "kube-state-metrics": self.kube_state_metrics,
            "kueue": self.kueue,
        }


@dataclass(frozen=True)
class AlertThresholds:
    gpu_temp_for: str
    thermal_throttle_percent: float
    thermal_throttle_for: str
    error_window: str
    nvlink_errors_per_window: int
    infiniband_errors_per_window: int
    infiniband_port_down_for: str
    gpu_missing_for: str
    profiling_missing_for: str
    exporter_down_for: str
    quota_drift_for: str
    pods_ready_timeout_evictions_per_hour: int
    inference_pending_for: str
    gate_transitions_per_hour: int
    virtual_node_not_ready_for: str
    # the overflow gate's and the health controller's own alerts (alerts/overflow.py, health.py)
    controller_error_window: str
    controller_no_leader_for: str
    controller_blind_min_seconds: int


@dataclass(frozen=True)
class Dashboards:
    delivery: Delivery
    uid_prefix: str
    folder: str
    sidecar_labels: Mapping[str, str]
    sidecar_folder_annotation: str
    instance_selector: Mapping[str, str]
    refresh: str


def _sorted_codes(codes: Iterable[int]) -> tuple[int, ...]:
    return tuple(sorted(codes))


@dataclass(frozen=True)
class Monitoring:
    namespace: str  # the stack's: its Prometheus, Grafana, and where rules and dashboards go
    stack: Stack
    release: str  # the stack's Helm release: its Prometheus selects `release: <this>`
    external_metrics_adapter: ExternalMetricsAdapter
    # the versions the environment runs; label names follow from them
    exporters: Exporters = field(metadata=setting(convert=build_exporters))
    node_exporter_host_label: str
    selectors: Selectors
    gpu_temp_limit_celsius: int
    gpu_temp_plausible_max_celsius: int  # at or above: a DCGM placeholder, not a reading
    xid_replace_codes: tuple[int, ...] = field(metadata=setting(convert=_sorted_codes))
    infiniband_devices: str  # RE2 regex
    checkpoint_write_query: str  # PromQL, bytes/second
    dcgm_namespace: str = field(metadata=setting("dcgmExporter.namespace"))
    dcgm_config_map: str = field(metadata=setting("dcgmExporter.configMapName"))
    dashboards: Dashboards
    rules_labels: Mapping[str, str] = field(metadata=setting("rules.labels"))
    # %s = lower-case alert name
    runbook_url_pattern: str = field(metadata=setting("rules.runbookUrlPattern"))
    alerts: AlertThresholds

    @property
    def host_label(self) -> str:
        """dcgm-exporter's node-name label, as the release the spec names emits it."""
        return self.exporters.dcgm.release.host_label

    @property
    def selection_labels(self) -> dict[str, str]:
        """Labels of every ServiceMonitor and PrometheusRule trainyard renders or configures:
        `release: <release>`, what kube-prometheus-stack's Prometheus selects with the chart's
        default values (88.5.3 templates/prometheus/prometheus.yaml: serviceMonitorSelector and
        ruleSelector `matchLabels: {release: <Release.Name>}` while *SelectorNilUsesHelmValues
        is true, the default), then rules.labels (a release key there other than this one is
        refused by generators/model/checks/monitoring.py)."""
        return {"release": self.release, **self.rules_labels}

    @property
    def prometheus_url(self) -> str:
        """The in-cluster Prometheus API: `prometheus-operated`, the Service prometheus-operator
        creates beside every Prometheus it runs, in the stack's namespace, port 9090 (web).
        The one default of the gate's and the health controller's prometheusUrl."""
        return f"http://prometheus-operated.{self.namespace}.svc:9090"

    def dashboard_uid(self, slug: str) -> str:
        uid = f"{self.dashboards.uid_prefix}-{slug}"
        if len(uid) > MAX_DASHBOARD_UID:  # prefix <= 16 by schema, slugs are ours: a bug here
            raise ValueError(f"dashboard UID {uid!r} is longer than {MAX_DASHBOARD_UID} characters")
        return uid
