"""The mismatches with a monitoring stack that the environment file itself shows
(generators/model/checks/monitoring.py), each at its file:line:col.

Each case edits prod's file (kube-prometheus-stack release `kube-prometheus-stack` in
`monitoring`, the defaults; overflow on) the way the trial's cluster was written: its stack
is release `monitoring` in `observability`, and the guide's old gate URL named
`kube-prometheus-stack-prometheus.monitoring.svc`. Expected messages are literals.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from generators.model.checks.monitoring import prometheus_service, stack_fullname
from tests.support import ROOT
from tests.support.edits import edited
from tests.support.scratch import repo_with, run_cli, tree_digest

STACK = "monitoring:\n  release: monitoring\n  namespace: observability\n"
SHIPPED_URL = "    prometheusUrl: http://prometheus-operated.monitoring.svc:9090\n"  # prod's gate
OLD_GUIDE_URL = "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"


def _prod(*edits: tuple[str, str]) -> str:
    text = edited((ROOT / "environments" / "prod.yaml").read_text(), "name: prod\n", "name: bad\n")
    for old, new in edits:
        text = edited(text, old, new)
    return text


def _position(text: str, marker: str) -> str:
    offset = text.index(marker)
    return f"{text.count(chr(10), 0, offset) + 1}:{offset - text.rfind(chr(10), 0, offset)}"


def _render(tmp_path: Path, text: str) -> tuple[int, str, Path]:
    root = repo_with(tmp_path, text)
    code, _, err = run_cli(root, "render", "bad")
    return code, err, root


def test_a_release_label_the_stack_does_not_select_is_refused(tmp_path: Path) -> None:
    text = _prod(("monitoring:\n", STACK + "  rules: {labels: {release: kube-prometheus-stack}}\n"))
    root = repo_with(tmp_path, text)
    before = tree_digest(root / "rendered")
    code, _, err = run_cli(root, "render", "bad")
    assert code == 1, err
    at = _position(text, "kube-prometheus-stack}}")
    assert (
        f"environments/bad.yaml:{at}: error: release label 'kube-prometheus-stack' is not "
        "monitoring.release 'monitoring': the stack's Prometheus selects release: monitoring and "
        "would select none of trainyard's ServiceMonitors and rules (monitoring.rules.labels.release); "
        "remove it, or set monitoring.release to the stack's Helm release (docs/adopting.md)"
    ) in err.splitlines(), err
    assert tree_digest(root / "rendered") == before


OTHER_RELEASE_URL = "http://kube-prometheus-stack-prometheus.observability.svc:9090"


@pytest.mark.parametrize(
    ("edits", "marker", "warning"),
    [
        pytest.param(
            [("monitoring:\n", STACK), (SHIPPED_URL, f"    prometheusUrl: {OLD_GUIDE_URL}\n")],
            OLD_GUIDE_URL,
            "overflow asks Prometheus kube-prometheus-stack-prometheus in namespace monitoring, but the "
            "stack runs in monitoring.namespace 'observability' (overflow.gate.prometheusUrl); remove "
            "it: the default is http://prometheus-operated.observability.svc:9090",
            id="a_gate_url_in_another_namespace",
        ),
        pytest.param(
            [("monitoring:\n", STACK), (SHIPPED_URL, f"    prometheusUrl: {OTHER_RELEASE_URL}\n")],
            OTHER_RELEASE_URL,
            "overflow asks Prometheus kube-prometheus-stack-prometheus in namespace observability: "
            "release monitoring (monitoring.release) names its Prometheus Service "
            "monitoring-kube-prometheus-prometheus (overflow.gate.prometheusUrl); remove it: the "
            "default is http://prometheus-operated.observability.svc:9090",
            id="a_gate_url_naming_another_releases_prometheus",
        ),
        pytest.param(
            [("dcgmExporter: 4.4.1-4.5.2-distroless", "dcgmExporter: 4.5.2")],
            "4.5.2,",
            "dcgm-exporter 4.5.2 names no image: the GPU operator values cannot pin it, so the "
            "operator runs its chart's default image, a release whose labels were not read for this "
            "environment (monitoring.exporters.dcgmExporter); write the image tag "
            "4.4.1-4.5.2-distroless (or -ubuntu22.04)",
            id="a_dcgm_exporter_named_by_version_is_not_pinned",
        ),
        pytest.param(
            # 4.5.1 is inside the checked range (4.5.0 to 4.8.2) but no such release was tabled.
            [("dcgmExporter: 4.4.1-4.5.2-distroless", "dcgmExporter: 4.4.1-4.5.1-distroless")],
            "4.4.1-4.5.1",
            "dcgm-exporter 4.5.1 is not in the table of releases this project has read "
            "(generators/model/exporters.py): its image tag's DCGM part is not checked "
            "(monitoring.exporters.dcgmExporter); name a tabled release, e.g. 4.5.3-4.8.2-distroless",
            id="a_dcgm_exporter_outside_the_table",
        ),
    ],
)
def test_a_mismatch_warns_at_its_place(
    tmp_path: Path, edits: list[tuple[str, str]], marker: str, warning: str
) -> None:
    text = _prod(*edits)
    code, err, _ = _render(tmp_path, text)
    assert code == 0, err
    assert f"environments/bad.yaml:{_position(text, marker)}: warning: {warning}" in err.splitlines(), err


@pytest.mark.parametrize(
    "url",
    [
        "http://prometheus-operated.observability.svc:9090",
        "http://monitoring-kube-prometheus-prometheus.observability.svc.cluster.local:9090/",
    ],
)
def test_a_url_of_the_stack_is_quiet(tmp_path: Path, url: str) -> None:
    text = _prod(("monitoring:\n", STACK), (SHIPPED_URL, f"    prometheusUrl: {url}\n"))
    code, err, _ = _render(tmp_path, text)
    assert code == 0, err
    assert "prometheusUrl" not in err, err


def test_the_charts_service_names() -> None:
    """kube-prometheus-stack 88.5.3 templates/_helpers.tpl fullname, worked by hand: a release
    containing the chart's name is the full name; else `<release>-kube-prometheus-stack` cut
    to 26 characters and a trailing `-` dropped."""
    assert prometheus_service("kube-prometheus-stack") == "kube-prometheus-stack-prometheus"
    assert prometheus_service("monitoring") == "monitoring-kube-prometheus-prometheus"
    assert stack_fullname("observability") == "observability-kube-prometh"
    assert stack_fullname("abcdefghijkl") == "abcdefghijkl-kube-prometheu"[:26]
    assert stack_fullname("abcdefghijklmnopqrstuvwxy") == "abcdefghijklmnopqrstuvwxy"  # 25 + "-" dropped
