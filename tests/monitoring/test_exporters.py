"""Exporter versions (generators/model/exporters.py): a version is accepted by the label contract
its range shares (both ends read upstream, cited in that module's docstring), refused
outside every range with the ranges and the override named (through the CLI at line and
column: a row of test_refusals.py), and an environment may state the contract of a version
no range covers (monitoring.exporters.labelContract), which then decides the rendered label
names. Expected values are literals or the spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generators.components.monitoring.alerts import groups
from generators.model import exporters
from generators.promql.vocabulary import ksm_label
from tests.monitoring.conftest import Shipped
from tests.monitoring.minimal import with_section
from tests.support import ROOT
from tests.support.scratch import run_cli


@pytest.mark.parametrize("version", sorted(exporters.DCGM_EXPORTER))
def test_every_tabled_dcgm_exporter_release_parses_as_version_and_image_tag(version: str) -> None:
    release = exporters.DCGM_EXPORTER[version]
    assert exporters.dcgm_exporter(version).image_tag is None
    tag = f"{release.release_tag}-ubuntu22.04"
    choice = exporters.dcgm_exporter(tag)
    assert choice.release == release and choice.image_tag == tag


@pytest.mark.parametrize("text", ["4.7", "latest", "4.6.0-ubuntu22.04"])
def test_a_dcgm_exporter_value_that_is_no_version_is_refused(text: str) -> None:
    with pytest.raises(exporters.UnknownVersion, match="is not a version"):
        exporters.dcgm_exporter(text)


def test_an_image_tag_with_the_wrong_dcgm_part_is_refused() -> None:
    with pytest.raises(exporters.UnknownVersion) as refused:
        exporters.dcgm_exporter("4.4.2-4.6.0-ubuntu22.04")
    assert refused.value.hint == "write 4.4.1-4.6.0-ubuntu22.04 or 4.6.0"


@pytest.mark.parametrize(
    ("parse", "text", "range_text", "override"),
    [
        (exporters.dcgm_exporter, "4.8.3", "4.5.0 to 4.8.2", "dcgmExporter.hostLabel"),
        (exporters.dcgm_exporter, "4.4.0-4.4.0-ubuntu22.04", "4.5.0 to 4.8.2", "dcgmExporter.hostLabel"),
        (exporters.kube_state_metrics, "2.21.0", "2.0.0 to 2.20.0", "kubeStateMetrics.allowlistFlag"),
        (exporters.kube_state_metrics, "v1.9.8", "2.0.0 to 2.20.0", "kubeStateMetrics.allowlistFlag"),
        (exporters.node_exporter, "1.4.0", "1.5.0 to 1.12.1", "nodeExporter.chartDefaults"),
        (exporters.node_exporter, "1.13.0", "1.5.0 to 1.12.1", "nodeExporter.chartDefaults"),
    ],
)
def test_outside_every_range_is_refused_naming_the_range_and_the_override(
    parse: object, text: str, range_text: str, override: str
) -> None:
    with pytest.raises(exporters.UnknownVersion) as refused:
        parse(text)  # type: ignore[operator]
    assert f"({range_text})" in str(refused.value)
    assert f"monitoring.exporters.labelContract.{override}" in refused.value.hint


def test_untabled_versions_inside_a_range_are_accepted_with_the_range_contract() -> None:
    assert exporters.kube_state_metrics("2.18.0").allowlist_flag == "--metric-labels-allowlist"
    assert exporters.kube_state_metrics("v2.0.0").version == "2.0.0"
    ne = exporters.node_exporter("1.11.1")  # kube-prometheus v0.18.0's release, never tabled
    assert ne.chart == "88.5.3" and ne.chart_extra_args[0].startswith(
        "--collector.filesystem.mount-points-exclude=^/(dev|proc|sys|run/containerd/.+|"
    )
    assert exporters.node_exporter("1.10.2").chart == "79.0.0"  # the chart that ships it
    assert exporters.dcgm_exporter("4.5.1").release.host_label == "Hostname"  # inside 4.5.0..4.8.2


def test_a_stated_contract_is_refused_for_a_version_a_range_covers() -> None:
    with pytest.raises(exporters.UnknownVersion) as refused:
        exporters.dcgm_exporter("4.6.0", {"hostLabel": "hostname"})
    assert refused.value.hint == "remove monitoring.exporters.labelContract.dcgmExporter"


def test_the_schema_offers_exactly_the_tabled_chart_defaults() -> None:
    schema = json.loads((ROOT / "schemas" / "monitoring.schema.json").read_text())
    contract = schema["properties"]["exporters"]["properties"]["labelContract"]["properties"]
    offered = contract["nodeExporter"]["properties"]["chartDefaults"]["enum"]
    assert offered == sorted(exporters.CHART_EXTRA_ARGS)


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("nvidia.com/gpu.product", "label_nvidia_com_gpu_product"),
        ("kubernetes.io/arch", "label_kubernetes_io_arch"),
        ("node.example.com/instanceType", "label_node_example_com_instance_type"),  # toSnakeCase
        ("Pool", "label_pool"),
    ],
)
def test_node_label_names_follow_kube_state_metrics(key: str, label: str) -> None:
    """Literal outputs of labelName in kube-state-metrics internal/store/utils.go (v2.20.0)."""
    assert ksm_label(key) == label


def test_rules_group_gpu_alerts_by_the_host_label_of_the_named_release(shipped: Shipped) -> None:
    host = exporters.dcgm_exporter(shipped.spec["monitoring"]["exporters"]["dcgmExporter"]).release.host_label
    rules = [r for g in groups(shipped.env) for r in g["rules"] if r.get("alert") == "GPUTemperatureHigh"]
    assert rules and rules[0]["expr"].startswith(f"max by ({host}, gpu, UUID) ")


def _render(tmp_path: Path, monitoring: str) -> tuple[Path, int, str, str]:
    root = with_section(tmp_path, monitoring)
    code, out, err = run_cli(root, "render", "bad")
    return root, code, out, err


def test_a_stated_contract_renders_into_the_label_names(tmp_path: Path) -> None:
    root, code, out, err = _render(
        tmp_path,
        (
            "monitoring:\n  exporters:\n    dcgmExporter: 4.9.0\n    kubeStateMetrics: 2.21.0\n"
            "    labelContract:\n      dcgmExporter: {hostLabel: hostname}\n"
            "      kubeStateMetrics: {allowlistFlag: --metric-labels-allowlist}\n"
        ),
    )
    assert code == 0, (out, err)
    rules = "".join(
        p.read_text()
        for p in (root / "rendered" / "bad").rglob("*.yaml")
        if "PrometheusRule" in p.read_text()
    )
    assert "max by (hostname, gpu, UUID) " in rules and "Hostname" not in rules


def test_a_stated_node_exporter_contract_picks_the_chart_defaults_it_names() -> None:
    """kube-prometheus-stack 79.0.0's prometheus-node-exporter.extraArgs (values.yaml), literal."""
    release = exporters.node_exporter("1.13.0", {"chartDefaults": "79.0.0"})
    assert release.chart == "79.0.0"
    assert release.chart_extra_args[0] == (
        "--collector.filesystem.mount-points-exclude=^/(dev|proc|sys|var/lib/docker/.+|var/lib/kubelet/.+)($|/)"
    )
