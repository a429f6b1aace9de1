"""Exporter releases this project accepts, and what follows from each (shared by the spec
checks and the model, like generators/model/teams.py).

`monitoring.exporters` names the versions an environment runs; the label names the
dashboards and rules use, and the installer values (rendered/<env>/installers/), follow from
them. A version is accepted by the *label contract* it shares with its neighbours: each
exporter has a version range, both ends read in upstream source at the tag, over which the
facts we depend on do not change. A version outside every range is refused unless the
environment states its contract itself (`monitoring.exporters.labelContract`), because
nobody has read its source. docs/monitoring.md ("Exporter versions") says how to widen a range.

The ranges and what each end was checked against (upstream source, `git show <tag>:<path>`):
- dcgm-exporter 4.5.0 (tag 4.4.0-4.5.0) to 4.8.2 (tag 4.5.3-4.8.2): `gpuMetricsFormat`, the
  template of every GPU-entity series (all the DCGM_FI_* fields we use), in
  internal/pkg/rendermetrics/render_metrics.go writes `Hostname="..."` at both tags and at
  every tag between (the same file back to 4.0.0-4.0.1; the range starts where this
  project's counters CSV was first checked). The rename to `hostname` (PR #655, commit
  d5e5f51, 2026-05-12) is on main after 4.8.2. From 4.6.0 the NVLink *link-entity*
  template (`linkMetricsFormat`) writes a lowercase `hostname`; no dashboard or rule reads
  link-entity series. The release tags stay tabled (DCGM_EXPORTER): an image tag's DCGM
  part is checked against the release's.
- kube-state-metrics v2.0.0 to v2.20.0: pkg/options/options.go registers
  `--metric-labels-allowlist` at both tags, and internal/store/utils.go names a Kubernetes
  label `label_` + lintLabelName(SanitizeLabelName(key)): every char outside [a-zA-Z0-9_]
  becomes `_`, then a lower-to-upper boundary becomes `_` and all is lower-cased
  (`labelName`, `toSnakeCase`; v2.0.0 lines 124-126, v2.20.0 lines 143-159).
- node_exporter v1.5.0 to v1.12.1: collector/mountstats_linux.go registers `mountstats`
  defaultDisabled with `write_bytes_total` (node_mountstats_nfs_write_bytes_total),
  collector/infiniband_linux.go `infiniband` defaultEnabled with `state_id` and
  `physical_state_id`, collector/filesystem_common.go the `mount-points-exclude` and
  `fs-types-exclude` flags the chart defaults use (every minor release in between too).
  Its `extraArgs` in kube-prometheus-stack replace the chart's defaults, so the contract is
  also the chart release whose defaults we repeat (CHART_EXTRA_ARGS): a tabled version
  keeps the chart that ships it, any other the chart generators/upstream/charts.py pins.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from generators.upstream import charts

# Series facts the alert rules and the dashboards both read (one table, one home).
# DCGM reports "no value" as sentinels from DCGM_INT64_BLANK = 0x7ffffffffffffff0 up (old
# exporters show 9223372036854775794, NOT_SUPPORTED). A counter that jumps to one looks like
# billions of errors; real counters (even nanoseconds of throttling) never get near it. The
# one home of this number: the quarantine conditions, alerts and dashboards all import it.
DCGM_BLANK_MIN = 0x7FFFFFFFFFFFFFF0
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


Version = tuple[int, int, int]


def parse_version(text: str) -> Version | None:
    """1.12.1 or v1.12.1 -> (1, 12, 1); None for anything else (4.7, latest)."""
    match = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)", text)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


@dataclass(frozen=True)
class Range:
    """Versions from `oldest` to `newest`, both read at their tag (module docstring)."""

    oldest: str
    newest: str

    def __contains__(self, version: Version) -> bool:
        return _v(self.oldest) <= version <= _v(self.newest)

    def __str__(self) -> str:
        return f"{self.oldest} to {self.newest}"


def _v(text: str) -> Version:
    version = parse_version(text)
    assert version is not None, text  # our own table
    return version


@dataclass(frozen=True)
class DcgmExporterRelease:
    version: str  # the exporter's own version: the second part of its image tag
    dcgm: str | None  # the DCGM version it was released with (None: a version not tabled)
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
    chart: str  # the kube-prometheus-stack release whose defaults we repeat
    chart_extra_args: tuple[str, ...]  # that chart's prometheus-node-exporter.extraArgs


DCGM_HOSTNAME = Range("4.5.0", "4.8.2")  # GPU series carry `Hostname`
KUBE_STATE_METRICS_RANGE = Range("2.0.0", "2.20.0")  # --metric-labels-allowlist, label_<snake>
NODE_EXPORTER_RANGE = Range("1.5.0", "1.12.1")  # mountstats, infiniband, the chart's flags
ALLOWLIST_FLAG = "--metric-labels-allowlist"


def _dcgm(tag: str) -> DcgmExporterRelease:
    dcgm, version = tag.split("-")
    return DcgmExporterRelease(version, dcgm, "Hostname")


# Every release tag from 4.5.0 to the newest one read (4.5.3-4.8.2), for the DCGM pairing.
DCGM_EXPORTER: dict[str, DcgmExporterRelease] = {
    r.version: r
    for r in map(
        _dcgm,
        (
            "4.4.0-4.5.0",
            "4.4.1-4.5.2",
            "4.4.1-4.6.0",
            "4.4.2-4.7.0",
            "4.4.2-4.7.1",
            "4.5.1-4.8.0",
            "4.5.2-4.8.1",
            "4.5.3-4.8.2",
        ),
    )
}

# prometheus-community/helm-charts charts/kube-prometheus-stack/values.yaml,
# prometheus-node-exporter.extraArgs, at two releases (79.0.0 ships node_exporter 1.10.2 and
# kube-state-metrics 2.17.0; 88.5.3, the pinned chart, node_exporter 1.12.1 and 2.20.0).
_FS_TYPES = (
    "--collector.filesystem.fs-types-exclude=^(autofs|binfmt_misc|bpf|cgroup2?|configfs|debugfs|"
    "devpts|devtmpfs|fusectl|hugetlbfs|iso9660|mqueue|nsfs|overlay|proc|procfs|pstore|rpc_pipefs|"
    "securityfs|selinuxfs|squashfs|sysfs|tracefs|erofs)$"
)
CHART_EXTRA_ARGS: dict[str, tuple[str, ...]] = {
    "79.0.0": (
        "--collector.filesystem.mount-points-exclude=^/(dev|proc|sys|var/lib/docker/.+|var/lib/kubelet/.+)($|/)",
        _FS_TYPES,
    ),
    "88.5.3": (
        "--collector.filesystem.mount-points-exclude="
        "^/(dev|proc|sys|run/containerd/.+|var/lib/docker/.+|var/lib/kubelet/.+)($|/)",
        _FS_TYPES,
    ),
}
PINNED_CHART = charts.KUBE_PROMETHEUS_STACK.version
SHIPPED_BY = {"1.10.2": "79.0.0", "1.12.1": "88.5.3"}  # node_exporter -> the chart shipping it

# dcgm-exporter image tags: <dcgm>-<exporter>-<os>, e.g. 4.4.1-4.6.0-ubuntu22.04, -distroless.
_IMAGE_TAG = re.compile(r"^(?P<dcgm>\d+\.\d+\.\d+)-(?P<version>\d+\.\d+\.\d+)-(?P<os>[a-z][a-z0-9.]*)$")

_OVERRIDE = "monitoring.exporters.labelContract"


class UnknownVersion(ValueError):
    """A version no range covers and no stated contract answers; `hint` says what to do."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def _uncovered(name: str, text: str, covered: Range, override: str) -> UnknownVersion:
    return UnknownVersion(
        f"{name} {text!r} is outside the versions whose label contract this project has read ({covered})",
        f"name a version in that range, or state the contract: {_OVERRIDE}.{override} "
        "(docs/monitoring.md, 'Exporter versions')",
    )


def _covered(name: str, text: str, key: str) -> UnknownVersion:
    return UnknownVersion(
        f"{name} {text} is in a checked range: its label contract is known", f"remove {_OVERRIDE}.{key}"
    )


@dataclass(frozen=True)
class DcgmExporterChoice:
    release: DcgmExporterRelease
    image_tag: str | None  # set when the spec gave the image tag (the GPU operator's version value)


Contract = Mapping[str, str]  # one exporter's stated label contract (labelContract.<key>)


def _contract_where_needed(
    name: str, text: str, inside: bool, covered: Range, override: str, stated: Contract | None
) -> None:
    """A label contract is stated for a version outside the checked range, and only there:
    inside it the tabled contract is known, outside it nothing else says the labels."""
    if inside and stated:
        raise _covered(name, text, override.split(".")[0])
    if not inside and not stated:
        raise _uncovered(name, text, covered, override)


def dcgm_exporter(text: str, stated: Contract | None = None) -> DcgmExporterChoice:
    """The release a spec value names: an exporter version (4.6.0) or an image tag
    (4.4.1-4.6.0-ubuntu22.04, whose DCGM part must be the one a tabled release shipped with)."""
    tag = _IMAGE_TAG.match(text)
    version_text = tag["version"] if tag else text
    version = parse_version(version_text)
    if version is None:
        raise UnknownVersion(
            f"dcgm-exporter {text!r} is not a version",
            "write an exporter version "
            "(4.6.0) or an image tag <dcgm>-<exporter>-<os> (4.4.1-4.6.0-ubuntu22.04)",
        )
    inside = version in DCGM_HOSTNAME
    named = version_text if inside else text  # inside the range: the exporter version, not the tag
    _contract_where_needed("dcgm-exporter", named, inside, DCGM_HOSTNAME, "dcgmExporter.hostLabel", stated)
    release = DCGM_EXPORTER.get(version_text)
    if release is None:
        release = DcgmExporterRelease(version_text, None, stated["hostLabel"] if stated else "Hostname")
    elif tag and tag["dcgm"] != release.dcgm:
        raise UnknownVersion(
            f"no dcgm-exporter image {text!r}: exporter {version_text} was released with DCGM {release.dcgm}",
            f"write {release.release_tag}-{tag['os']} or {version_text}",
        )
    return DcgmExporterChoice(release, text if tag else None)


def kube_state_metrics(text: str, stated: Contract | None = None) -> KubeStateMetricsRelease:
    version = parse_version(text)
    inside = version is not None and version in KUBE_STATE_METRICS_RANGE
    _contract_where_needed(
        "kube-state-metrics", text, inside, KUBE_STATE_METRICS_RANGE, "kubeStateMetrics.allowlistFlag", stated
    )
    flag = stated["allowlistFlag"] if stated else ALLOWLIST_FLAG
    return KubeStateMetricsRelease(text.removeprefix("v"), flag)


def node_exporter(text: str, stated: Contract | None = None) -> NodeExporterRelease:
    version = parse_version(text)
    inside = version is not None and version in NODE_EXPORTER_RANGE
    _contract_where_needed(
        "node_exporter", text, inside, NODE_EXPORTER_RANGE, "nodeExporter.chartDefaults", stated
    )
    plain = text.removeprefix("v")
    chart = stated["chartDefaults"] if stated else SHIPPED_BY.get(plain, PINNED_CHART)
    return NodeExporterRelease(plain, chart, CHART_EXTRA_ARGS[chart])


# spec key under monitoring.exporters -> parser (semantics checks each, the model builds them)
PARSERS: dict[str, Callable[[str, Contract | None], object]] = {
    "dcgmExporter": dcgm_exporter,
    "kubeStateMetrics": kube_state_metrics,
    "nodeExporter": node_exporter,
}


@dataclass(frozen=True)
class Exporters:
    dcgm: DcgmExporterChoice
    kube_state_metrics: KubeStateMetricsRelease
    node_exporter: NodeExporterRelease


def build_exporters(raw: Mapping[str, Any]) -> Exporters:
    """Model of monitoring.exporters (already checked by generators/model/checks/semantics.py)."""
    stated = raw.get("labelContract", {})
    return Exporters(
        dcgm_exporter(raw["dcgmExporter"], stated.get("dcgmExporter")),
        kube_state_metrics(raw["kubeStateMetrics"], stated.get("kubeStateMetrics")),
        node_exporter(raw["nodeExporter"], stated.get("nodeExporter")),
    )
