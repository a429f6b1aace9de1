"""The exporter table (generators/exporters.py): versions and image tags it accepts, what it
refuses, and that the label names of the rendered rules follow from the named version."""

from __future__ import annotations

import pytest

from generators import exporters
from generators.components.monitoring.alerts import groups
from tests.monitoring.conftest import Shipped


@pytest.mark.parametrize("version", sorted(exporters.DCGM_EXPORTER))
def test_every_checked_dcgm_exporter_release_parses_as_version_and_image_tag(version: str) -> None:
    release = exporters.DCGM_EXPORTER[version]
    assert exporters.dcgm_exporter(version).image_tag is None
    tag = f"{release.release_tag}-ubuntu22.04"
    choice = exporters.dcgm_exporter(tag)
    assert choice.release == release and choice.image_tag == tag


@pytest.mark.parametrize("text", ["4.7", "5.0.0", "4.8.3", "4.4.2-4.6.0-ubuntu22.04", "latest",
                                  "4.6.0-ubuntu22.04"])
def test_unchecked_dcgm_exporter_versions_are_refused_with_the_known_ones(text: str) -> None:
    with pytest.raises(exporters.UnknownVersion) as refused:
        exporters.dcgm_exporter(text)
    assert "4.6.0" in refused.value.hint


def test_released_dcgm_exporters_write_hostname_with_a_capital_h() -> None:
    """Checked at every tag up to 4.5.3-4.8.2 (gpuMetricsFormat); the lowercase rename is on
    main only. A row for a release carrying it must say `hostname`."""
    assert {r.host_label for r in exporters.DCGM_EXPORTER.values()} == {"Hostname"}


@pytest.mark.parametrize(("parse", "text"), [
    (exporters.kube_state_metrics, "2.16.0"),
    (exporters.node_exporter, "1.9.0"),
])
def test_unchecked_ksm_and_node_exporter_versions_are_refused(parse: object, text: str) -> None:
    with pytest.raises(exporters.UnknownVersion):
        parse(text)  # type: ignore[operator]


def test_rules_group_gpu_alerts_by_the_host_label_of_the_named_release(shipped: Shipped) -> None:
    host = exporters.dcgm_host_label(shipped.spec["monitoring"]["exporters"]["dcgmExporter"])
    rules = [r for g in groups(shipped.env) for r in g["rules"] if r.get("alert") == "GPUTemperatureHigh"]
    assert rules and rules[0]["expr"].startswith(f"max by ({host}, gpu, UUID) ")
