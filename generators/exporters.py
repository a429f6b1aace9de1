"""Exporter releases this project has checked, and what follows from each (shared by the
spec checks and the model, like generators/teams.py).

`monitoring.exporters` names the versions an environment runs; the label names the
dashboards and rules use, and the installer values (rendered/<env>/installers/), follow from
this table. A version that is not here is refused: nobody has read its source, so nothing
says which labels it emits. To add one, read the release's source at its tag (the places
cited in `source`), add a row, and run the tests (docs/monitoring.md, "Exporter versions").

What each row was checked against (upstream source at the release tag):
- dcgm-exporter: internal/pkg/rendermetrics/render_metrics.go, `gpuMetricsFormat` (the
  template of every GPU-entity series, all the DCGM_FI_* fields we use): `Hostname="..."`
  in every release tag up to and including 4.5.3-4.8.2. The rename to `hostname` (PR #655,
  commit d5e5f51, 2026-05-12) is on main after 4.8.2 and in no release checked here. From
  4.6.0 the NVLink *link-entity* template (`linkMetricsFormat`) writes a lowercase
  `hostname`, but no dashboard or rule uses link-entity series.
- kube-state-metrics: pkg/options/options.go (`--metric-labels-allowlist`) and
  internal/store/utils.go (`label_` + the key with every char outside [a-zA-Z0-9_] as `_`).
- node_exporter: collector/mountstats_linux.go (`mountstats` registered defaultDisabled,
  `node_mountstats_nfs_write_bytes_total`), collector/infiniband_linux.go (defaultEnabled).
  Its `extraArgs` in kube-prometheus-stack replace the chart's defaults, so each row keeps
  the chart release checked and those defaults, to repeat them (installers/).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Series facts the alert rules and the dashboards both read (one table, one home).
ACTIVE_STATE = 4  # node_infiniband_state_id: 4 = ACTIVE
LINK_UP_PHYSICAL_STATE = 5  # node_infiniband_physical_state_id: 5 = LinkUp
LINK_ERROR_COUNTERS = {  # counter label -> node-exporter counter
    "symbol_error": "node_infiniband_symbol_error_total",
    "link_error_recovery": "node_infiniband_link_error_recovery_total",
    "link_downed": "node_infiniband_link_downed_total",
    "port_errors_received": "node_infiniband_port_errors_received_total",
    "excessive_buffer_overrun": "node_infiniband_excessive_buffer_overrun_errors_total",
    "local_link_integrity": "node_infiniband_local_link_integrity_errors_total",
}
NVLINK_COUNTERS = {  # counter label -> DCGM field (none is in dcgm-exporter's default CSV)
    "crc_flit": "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "crc_data": "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "replay": "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "recovery": "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
}


@dataclass(frozen=True)
class DcgmExporterRelease:
    version: str  # the exporter's own version: the second part of its image tag
    dcgm: str  # the DCGM version it was released with: the first part of the image tag
    host_label: str  # label holding the node name on GPU series

    @property
    def release_tag(self) -> str:
        """The git tag and image-tag prefix: <dcgm>-<exporter>."""
        return f"{self.dcgm}-{self.version}"


@dataclass(frozen=True)
class KubeStateMetricsRelease:
    version: str
    allowlist_flag: str  # the flag that turns node labels into label_* on kube_node_labels


@dataclass(frozen=True)
class NodeExporterRelease:
    version: str
    chart: str  # the kube-prometheus-stack release that ships it, whose defaults we repeat
    chart_extra_args: tuple[str, ...]  # that chart's prometheus-node-exporter.extraArgs


def _dcgm(tag: str) -> DcgmExporterRelease:
    dcgm, version = tag.split("-")
    return DcgmExporterRelease(version, dcgm, "Hostname")


# Every release tag from 4.5.0 to the newest one read (4.5.3-4.8.2): GPU series carry
# `Hostname` in all of them (render_metrics.go's gpuMetricsFormat at each tag).
DCGM_EXPORTER: dict[str, DcgmExporterRelease] = {
    r.version: r
    for r in map(_dcgm, (
        "4.4.0-4.5.0", "4.4.1-4.5.2", "4.4.1-4.6.0", "4.4.2-4.7.0", "4.4.2-4.7.1",
        "4.5.1-4.8.0", "4.5.2-4.8.1", "4.5.3-4.8.2",
    ))
}

KUBE_STATE_METRICS: dict[str, KubeStateMetricsRelease] = {
    v: KubeStateMetricsRelease(v, "--metric-labels-allowlist") for v in ("2.17.0", "2.20.0")
}

# prometheus-community/helm-charts charts/kube-prometheus-stack/values.yaml at the release
# that ships each node_exporter (79.0.0: node_exporter 1.10.2, kube-state-metrics 2.17.0;
# 88.5.3: node_exporter 1.12.1, kube-state-metrics 2.20.0).
_FS_TYPES = (
    "--collector.filesystem.fs-types-exclude=^(autofs|binfmt_misc|bpf|cgroup2?|configfs|debugfs|"
    "devpts|devtmpfs|fusectl|hugetlbfs|iso9660|mqueue|nsfs|overlay|proc|procfs|pstore|rpc_pipefs|"
    "securityfs|selinuxfs|squashfs|sysfs|tracefs|erofs)$"
)
NODE_EXPORTER: dict[str, NodeExporterRelease] = {
    "1.10.2": NodeExporterRelease("1.10.2", "79.0.0", (
        "--collector.filesystem.mount-points-exclude=^/(dev|proc|sys|var/lib/docker/.+|var/lib/kubelet/.+)($|/)",
        _FS_TYPES,
    )),
    "1.12.1": NodeExporterRelease("1.12.1", "88.5.3", (
        "--collector.filesystem.mount-points-exclude="
        "^/(dev|proc|sys|run/containerd/.+|var/lib/docker/.+|var/lib/kubelet/.+)($|/)",
        _FS_TYPES,
    )),
}

# dcgm-exporter image tags: <dcgm>-<exporter>-<os>, e.g. 4.4.1-4.6.0-ubuntu22.04, -distroless.
_IMAGE_TAG = re.compile(r"^(?P<dcgm>\d+\.\d+\.\d+)-(?P<version>\d+\.\d+\.\d+)-(?P<os>[a-z][a-z0-9.]*)$")

HOW_TO_ADD = "to add a version, read its source and add a row to generators/exporters.py"


class UnknownVersion(ValueError):
    """A version the table does not have; `hint` lists the known ones."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class DcgmExporterChoice:
    release: DcgmExporterRelease
    image_tag: str | None  # set when the spec gave the image tag (the GPU operator's version value)


def dcgm_exporter(text: str) -> DcgmExporterChoice:
    """The release a spec value names: an exporter version (4.6.0) or an image tag
    (4.4.1-4.6.0-ubuntu22.04, whose DCGM part must be the one the exporter shipped with)."""
    known = ", ".join(DCGM_EXPORTER)
    tag = _IMAGE_TAG.match(text)
    version = tag["version"] if tag else text
    release = DCGM_EXPORTER.get(version)
    if release is None:
        raise UnknownVersion(f"dcgm-exporter {text!r} is not a version this project has checked",
                             f"known: {known} (or an image tag <dcgm>-<exporter>-<os>); {HOW_TO_ADD}")
    if tag and tag["dcgm"] != release.dcgm:
        raise UnknownVersion(f"no dcgm-exporter image {text!r}: exporter {version} was released with "
                             f"DCGM {release.dcgm}", f"write {release.release_tag}-{tag['os']} or {version}")
    return DcgmExporterChoice(release, text if tag else None)


def dcgm_host_label(text: str) -> str:
    """The host label of the dcgm-exporter a spec value names."""
    return dcgm_exporter(text).release.host_label


def kube_state_metrics(text: str) -> KubeStateMetricsRelease:
    release = KUBE_STATE_METRICS.get(text.removeprefix("v"))
    if release is None:
        raise UnknownVersion(f"kube-state-metrics {text!r} is not a version this project has checked",
                             f"known: {', '.join(KUBE_STATE_METRICS)}; {HOW_TO_ADD}")
    return release


def node_exporter(text: str) -> NodeExporterRelease:
    release = NODE_EXPORTER.get(text.removeprefix("v"))
    if release is None:
        raise UnknownVersion(f"node_exporter {text!r} is not a version this project has checked",
                             f"known: {', '.join(NODE_EXPORTER)}; {HOW_TO_ADD}")
    return release


# spec key under monitoring.exporters -> parser (semantics checks each, the model builds them)
PARSERS = {"dcgmExporter": dcgm_exporter, "kubeStateMetrics": kube_state_metrics,
           "nodeExporter": node_exporter}


@dataclass(frozen=True)
class Exporters:
    dcgm: DcgmExporterChoice
    kube_state_metrics: KubeStateMetricsRelease
    node_exporter: NodeExporterRelease


def build_exporters(raw: dict[str, str]) -> Exporters:
    """Model of monitoring.exporters (already checked by generators/spec/semantics.py)."""
    return Exporters(dcgm_exporter(raw["dcgmExporter"]),
                     kube_state_metrics(raw["kubeStateMetrics"]), node_exporter(raw["nodeExporter"]))
