"""The pinned prometheus-adapter v0.12.0 serves each rendered HPA's External metric.

The HPAs under rendered/<env>/overflow/ scale on an External metric that nothing served
until the adapter was rendered. Here the adapter's own code decides whether the rendered config serves
it: the pinned build (tools/install.py, from ../shared/src/prometheus-adapter-v0.12.0.tar.gz)
runs with the committed rendered/staging/monitoring/ Deployment's arguments and ConfigMap,
as the rendered ServiceAccount (a TokenRequest token; the rendered auth-delegator and
auth-reader bindings applied to a real kube-apiserver), against the pinned Prometheus
scraping a synthetic exporter (box/series.py; values are literals of this test).
The request is the one the HPA controller makes (the rendered HPA's metric name, namespace
and selector) and the expected values are this test's literals: the series that match the
HPA's namespace and selector summed, nothing else (a series of another Deployment and one of
another namespace are there to be left out).
"""

from __future__ import annotations

import json
import ssl
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from box import adapter as box_adapter
from box.daemon import Daemon
from box.kube import Kube
from box.monitoring import query
from box.series import SyntheticSeries
from tests.controlplane.harness import ControlPlane
from tests.support import ROOT, tools
from tests.support.prometheus import prometheus_server

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

RENDERED = ROOT / "rendered" / "staging"
HPA = RENDERED / "overflow" / "serving-staging" / "horizontalpodautoscaler-chat-api.yaml"
READY_SECONDS = 120


def _rendered_objects() -> list[dict[str, Any]]:
    return [
        yaml.safe_load(p.read_text(encoding="utf-8"))
        for p in sorted(RENDERED.rglob("*.yaml"))
        if "installers" not in p.parts
    ]


def _adapter_get(url: str, context: ssl.SSLContext) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as response:
            body: dict[str, Any] = json.load(response)
            return body
    except OSError:
        return None


@pytest.fixture(scope="module")
def served(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The adapter and Prometheus running; yields how to ask the adapter."""
    tools("prometheus", "prometheus-adapter")  # fails with the install command when one is missing
    folder = tmp_path_factory.mktemp("adapter")
    objects = _rendered_objects()
    hpa = yaml.safe_load(HPA.read_text(encoding="utf-8"))
    metric = hpa["spec"]["metrics"][0]["external"]["metric"]
    namespace = hpa["metadata"]["namespace"]
    series = SyntheticSeries().start()
    # Two pods of the HPA's Deployment (3 + 4 waiting), and two series it must not count.
    selector = metric["selector"]["matchLabels"]
    series.set(metric["name"], {"namespace": namespace, "pod": "chat-api-a", **selector}, 3)
    series.set(metric["name"], {"namespace": namespace, "pod": "chat-api-b", **selector}, 4)
    series.set(metric["name"], {"namespace": namespace, "pod": "other-a", "deployment": "other"}, 100)
    series.set(metric["name"], {"namespace": "elsewhere", "pod": "chat-api-c", **selector}, 1000)
    config = {
        "global": {"scrape_interval": "1s"},
        "scrape_configs": [{"job_name": "synthetic", "static_configs": [{"targets": [series.target]}]}],
    }
    prometheus = prometheus_server(folder, yaml.safe_dump(config))
    kube = Kube(control_plane.kubeconfig, folder / "discovery.json")
    daemon: Daemon | None = None
    try:
        prometheus.start()
        prometheus_url = prometheus.url
        # The adapter lists series once at start, then every relist interval: start it once
        # Prometheus holds all four.
        prometheus.daemon.wait_until(
            lambda: len(_safe_query(prometheus_url, metric["name"])) == 4,
            READY_SECONDS,
            "4 synthetic series scraped",
        )
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring"}})
        for obj in objects:
            if (
                obj["kind"] in ("ServiceAccount", "ClusterRoleBinding", "RoleBinding")
                and "prometheus-adapter" in obj["metadata"]["name"]
            ):
                kube.apply(obj)
        daemon = box_adapter.start(
            kube, control_plane.kubeconfig, objects, folder / "adapter", prometheus_url, speed=1
        )
        assert daemon is not None, "rendered/staging has no prometheus-adapter Deployment"
        assert control_plane.certs is not None
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # the adapter's own self-signed serving pair
        context.load_cert_chain(str(control_plane.certs.admin_cert), str(control_plane.certs.admin_key))
        base = f"https://127.0.0.1:{daemon.ports[0]}/apis/external.metrics.k8s.io/v1beta1"
        daemon.wait_until(
            lambda: any(
                r["name"] == metric["name"] for r in (_adapter_get(base, context) or {}).get("resources", [])
            ),
            READY_SECONDS,
            f"{metric['name']} listed",
        )
        yield {"base": base, "context": context, "metric": metric, "namespace": namespace, "daemon": daemon}
    finally:
        if daemon is not None:
            daemon.stop()
        prometheus.stop()
        series.stop()
        kube.close()


def _safe_query(url: str, promql: str) -> list[dict[str, object]]:
    try:
        return query(url, promql)
    except OSError:
        return []


def _value(served: dict[str, Any], namespace: str, selector: dict[str, str]) -> list[dict[str, Any]]:
    labels = ",".join(f"{k}={v}" for k, v in selector.items())
    url = f"{served['base']}/namespaces/{namespace}/{served['metric']['name']}"
    url += f"?{urllib.parse.urlencode({'labelSelector': labels})}" if labels else ""
    body = _adapter_get(url, served["context"])
    assert body is not None, served["daemon"].log_tail()
    assert body["kind"] == "ExternalMetricValueList", body
    items: list[dict[str, Any]] = body["items"]
    return items


def test_the_hpa_request_is_served_the_sum_of_its_deployments_series(served: dict[str, Any]) -> None:
    items = _value(served, served["namespace"], served["metric"]["selector"]["matchLabels"])
    assert [(i["metricName"], i["value"]) for i in items] == [("vllm_num_requests_waiting", "7")]


def test_the_hpa_namespace_scopes_the_query(served: dict[str, Any]) -> None:
    """The same selector from another namespace sees only that namespace's series."""
    items = _value(served, "elsewhere", served["metric"]["selector"]["matchLabels"])
    assert [i["value"] for i in items] == ["1k"]


def test_without_the_selector_every_series_of_the_namespace_counts(served: dict[str, Any]) -> None:
    items = _value(served, served["namespace"], {})
    assert [i["value"] for i in items] == ["107"]
