"""A monitoring section this project cannot serve is refused where its value stands:
`file:line:col`, the reason, and what to state instead, nothing written
(minimal.first_refusal). One test, one row per refusal: a dcgm-exporter release outside
every label contract read (generators/model/exporters.py; the override named), and the
kube-prometheus stack (docs/monitoring.md "Supported monitoring stacks").
Expected messages are literals."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.monitoring.minimal import first_refusal


@pytest.mark.parametrize(
    ("section", "below", "column", "reason", "way_out"),
    [
        pytest.param(
            "monitoring:\n  exporters:\n    dcgmExporter: 4.9.0\n",
            2,
            19,
            "dcgm-exporter '4.9.0' is outside the versions whose label contract this project has "
            "read (4.5.0 to 4.8.2)",
            ["monitoring.exporters.labelContract.dcgmExporter.hostLabel"],
            id="uncovered-dcgm-exporter",
        ),
        pytest.param(
            "monitoring:\n  stack: kube-prometheus\n",
            1,
            10,
            "monitoring stack 'kube-prometheus' is not supported yet: its Prometheus may discover "
            "targets only in default, kube-system and monitoring",
            ["(monitoring.stack)", "use stack: kube-prometheus-stack"],
            id="kube-prometheus",
        ),
    ],
)
def test_a_section_it_cannot_serve_is_refused_at_line_and_column_with_the_way_out(
    tmp_path: Path, section: str, below: int, column: int, reason: str, way_out: list[str]
) -> None:
    """`below`: the refused value's line, counted from the section's first."""
    line, first = first_refusal(tmp_path, section)
    assert first.startswith(f"environments/bad.yaml:{line + below}:{column}: error: {reason}"), first
    for words in way_out:
        assert words in first, first
