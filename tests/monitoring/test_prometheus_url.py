"""The gate and the health controller default to one Prometheus URL, derived from
monitoring.namespace (generators/model/monitoring.py, Monitoring.prometheus_url), and a
URL the spec states wins."""

from __future__ import annotations

from pathlib import Path

from generators.model.load import load
from tests.support import ROOT
from tests.support.scratch import repo_with

GATE_URL = "    prometheusUrl: http://prometheus-operated.monitoring.svc:9090\n"


def _prod(tmp_path: Path, edit: str = "") -> str:
    text = (ROOT / "environments" / "prod.yaml").read_text()
    assert text.count(GATE_URL) == 1  # the gate's: health states none
    text = text.replace("name: prod\n", "name: bad\n", 1).replace(GATE_URL, edit)
    return text.replace("monitoring:\n", "monitoring:\n  namespace: obs\n", 1)


def test_both_default_to_the_in_cluster_prometheus_of_the_monitoring_namespace(tmp_path: Path) -> None:
    env = load(repo_with(tmp_path, _prod(tmp_path)), "bad")
    assert env.overflow is not None and env.health is not None and env.health.controller is not None
    assert env.overflow.gate.prometheus_url == "http://prometheus-operated.obs.svc:9090"
    assert env.health.controller.prometheus_url == "http://prometheus-operated.obs.svc:9090"


def test_a_stated_url_wins(tmp_path: Path) -> None:
    env = load(
        repo_with(tmp_path, _prod(tmp_path, "    prometheusUrl: http://thanos.obs.svc:10902\n")), "bad"
    )
    assert env.overflow is not None and env.health is not None and env.health.controller is not None
    assert env.overflow.gate.prometheus_url == "http://thanos.obs.svc:10902"
    assert env.health.controller.prometheus_url == "http://prometheus-operated.obs.svc:9090"
