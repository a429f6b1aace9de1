"""The `monitoring` section: selectors, label names, thresholds (schemas/monitoring.schema.json).

Like a monitoring mixin's config: dashboards and alert rules read only this and the pools
(expected GPUs per node), so one number in the environment file moves every panel
threshold and alert that depends on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from generators.exporters import Exporters, build_exporters

Delivery = Literal["sidecar", "grafana-operator"]

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


@dataclass(frozen=True)
class Dashboards:
    delivery: Delivery
    uid_prefix: str
    folder: str
    sidecar_labels: Mapping[str, str]
    sidecar_folder_annotation: str
    instance_selector: Mapping[str, str]
    refresh: str


@dataclass(frozen=True)
class Monitoring:
    namespace: str
    exporters: Exporters  # the versions the environment runs; label names follow from them
    node_exporter_host_label: str
    selectors: Selectors
    gpu_temp_limit_celsius: int
    gpu_temp_plausible_max_celsius: int  # at or above: a DCGM placeholder, not a reading
    xid_replace_codes: tuple[int, ...]
    infiniband_devices: str  # RE2 regex
    checkpoint_write_query: str  # PromQL, bytes/second
    dcgm_namespace: str
    dcgm_config_map: str
    dashboards: Dashboards
    rule_labels: Mapping[str, str]
    runbook_url_pattern: str  # %s = lower-case alert name
    alerts: AlertThresholds

    @property
    def host_label(self) -> str:
        """dcgm-exporter's node-name label, as the release the spec names emits it."""
        return self.exporters.dcgm.release.host_label

    def runbook_url(self, alert: str) -> str:
        return self.runbook_url_pattern.replace("%s", alert.lower())

    def dashboard_uid(self, slug: str) -> str:
        uid = f"{self.dashboards.uid_prefix}-{slug}"
        if len(uid) > MAX_DASHBOARD_UID:  # prefix <= 16 by schema, slugs are ours: a bug here
            raise ValueError(f"dashboard UID {uid!r} is longer than {MAX_DASHBOARD_UID} characters")
        return uid


def _selectors(raw: dict[str, Any]) -> Selectors:
    return Selectors(
        dcgm=raw["dcgm"],
        node_exporter=raw["nodeExporter"],
        kube_state_metrics=raw["kubeStateMetrics"],
        kueue=raw["kueue"],
    )


def _dashboards(raw: dict[str, Any]) -> Dashboards:
    return Dashboards(
        delivery=raw["delivery"],
        uid_prefix=raw["uidPrefix"],
        folder=raw["folder"],
        sidecar_labels=dict(sorted(raw["sidecarLabels"].items())),
        sidecar_folder_annotation=raw["sidecarFolderAnnotation"],
        instance_selector=dict(sorted(raw["instanceSelector"].items())),
        refresh=raw["refresh"],
    )


def _alert_thresholds(raw: dict[str, Any]) -> AlertThresholds:
    return AlertThresholds(
        gpu_temp_for=raw["gpuTempFor"],
        thermal_throttle_percent=raw["thermalThrottlePercent"],
        thermal_throttle_for=raw["thermalThrottleFor"],
        error_window=raw["errorWindow"],
        nvlink_errors_per_window=raw["nvlinkErrorsPerWindow"],
        infiniband_errors_per_window=raw["infinibandErrorsPerWindow"],
        infiniband_port_down_for=raw["infinibandPortDownFor"],
        gpu_missing_for=raw["gpuMissingFor"],
        profiling_missing_for=raw["profilingMissingFor"],
        exporter_down_for=raw["exporterDownFor"],
        quota_drift_for=raw["quotaDriftFor"],
        pods_ready_timeout_evictions_per_hour=raw["podsReadyTimeoutEvictionsPerHour"],
        inference_pending_for=raw["inferencePendingFor"],
        gate_transitions_per_hour=raw["gateTransitionsPerHour"],
        virtual_node_not_ready_for=raw["virtualNodeNotReadyFor"],
    )


def build_monitoring(raw: dict[str, Any]) -> Monitoring:
    """Model of the defaulted `monitoring` section."""
    return Monitoring(
        namespace=raw["namespace"],
        exporters=build_exporters(raw["exporters"]),
        node_exporter_host_label=raw["nodeExporterHostLabel"],
        selectors=_selectors(raw["selectors"]),
        gpu_temp_limit_celsius=raw["gpuTempLimitCelsius"],
        gpu_temp_plausible_max_celsius=raw["gpuTempPlausibleMaxCelsius"],
        xid_replace_codes=tuple(sorted(raw["xidReplaceCodes"])),
        infiniband_devices=raw["infinibandDevices"],
        checkpoint_write_query=raw["checkpointWriteQuery"],
        dcgm_namespace=raw["dcgmExporter"]["namespace"],
        dcgm_config_map=raw["dcgmExporter"]["configMapName"],
        dashboards=_dashboards(raw["dashboards"]),
        rule_labels=dict(sorted(raw["rules"]["labels"].items())),
        runbook_url_pattern=raw["rules"]["runbookUrlPattern"],
        alerts=_alert_thresholds(raw["alerts"]),
    )
