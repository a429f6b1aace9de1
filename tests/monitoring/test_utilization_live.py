"""The utilization dashboard's per-job row counts only GPUs a pod holds: the pinned Prometheus
scrapes a dcgm-exporter exposition through the ServiceMonitor gpu-operator makes from the
rendered values (honorLabels: true), translated the way prometheus-operator writes it
(tests/monitoring/servicemonitor.py).

The exposition is dcgm-exporter's own format (gpuMetricsFormat,
internal/pkg/rendermetrics/render_metrics.go at 4.4.1-4.5.2) for two GPUs of one node: GPU 0
held by pod research/train-0 (the attributes Process writes for it,
internal/pkg/transformation/kubernetes.go:265-274: pod, namespace, container and an empty
pod_uid, --kubernetes-enable-pod-uid being off), GPU 1 idle (no pod attributes). The target is
a static_config carrying the `__meta_kubernetes_*` labels kubernetes_sd's endpoints role gives
a pod-backed endpoint of the operator's Service (discovery/kubernetes/endpoints.go), so the
operator's relabeling writes `namespace`/`pod`/`container` of the exporter pod, and
honor_labels copies them onto the idle GPU's samples (scrape/scrape.go, mutateSampleLabels).

The panels' queries are read from the rendered dashboard, Grafana's variables set to "All".
The control is the old selector, `namespace!=""`: the same scrape gives it the idle GPU too,
labelled as the exporter pod, which is what crowded the straggler panel.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from box.httpd import Background, exposition_handler
from generators.model.promql import ExporterQueries
from tests.monitoring import servicemonitor
from tests.monitoring.conftest import Shipped, load_shipped
from tests.monitoring.gpu_operator import PORT, SERVICE, dcgm_service_monitor
from tests.monitoring.rendered_views import concrete
from tests.support import ROOT
from tests.support.httpserver import QuietHTTPServer
from tests.support.prometheus import Prometheus, prometheus_server

pytestmark = pytest.mark.slow  # starts the pinned Prometheus

ENV = "prod"
HOST = "gpu-node-0"
EXPORTER_POD = "nvidia-dcgm-exporter-x7k2p"
EXPORTER_CONTAINER = "nvidia-dcgm-exporter"
HELD = {"namespace": "research", "pod": "train-0", "container": "trainer"}
TENSOR = {"0": 0.42, "1": 0.0}  # the held GPU works; the idle one reads 0, the lowest of all
SERIES_SECONDS = 60  # discovery and the first scrapes on 2 busy cores


def exposition(host_label: str) -> str:
    """Three signals of the dashboard for GPU 0 (held) and GPU 1 (idle), as dcgm-exporter
    prints them (labels in its order: gpu, UUID, pci_bus_id, device, modelName, host, then
    the attributes sorted by Go's template range)."""
    lines = []
    for field, kind in (
        ("DCGM_FI_DEV_GPU_UTIL", "gauge"),
        ("DCGM_FI_PROF_SM_ACTIVE", "gauge"),
        ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge"),
    ):
        lines += [f"# HELP {field} {field}.", f"# TYPE {field} {kind}"]
        for gpu, tensor in TENSOR.items():
            labels = (
                f'gpu="{gpu}",UUID="GPU-0000000{gpu}",pci_bus_id="00000000:1{gpu}:00.0",'
                f'device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3",{host_label}="{HOST}"'
            )
            if gpu == "0":
                labels += ",".join(["", *(f'{k}="{HELD[k]}"' for k in sorted(HELD)), 'pod_uid=""'])
            value = tensor * 100 if field == "DCGM_FI_DEV_GPU_UTIL" else tensor
            lines.append(f"{field}{{{labels}}} {value}")
    return "\n".join(lines) + "\n"


def endpoint_meta(namespace: str) -> dict[str, str]:
    """What kubernetes_sd (role endpoints) gives a Running pod behind the operator's Service."""
    return {
        "__meta_kubernetes_namespace": namespace,
        "__meta_kubernetes_service_name": SERVICE,
        "__meta_kubernetes_service_label_app": SERVICE,
        "__meta_kubernetes_service_labelpresent_app": "true",
        "__meta_kubernetes_endpoint_port_name": PORT,
        "__meta_kubernetes_endpoint_address_target_kind": "Pod",
        "__meta_kubernetes_endpoint_address_target_name": EXPORTER_POD,
        "__meta_kubernetes_pod_name": EXPORTER_POD,
        "__meta_kubernetes_pod_container_name": EXPORTER_CONTAINER,
        "__meta_kubernetes_pod_phase": "Running",
        "__meta_kubernetes_pod_node_name": HOST,
    }


def operator_monitor(shipped: Shipped) -> dict[str, Any]:
    """The ServiceMonitor the operator makes from the rendered gpu-operator values (the chart
    copies `dcgmExporter` into the ClusterPolicy's spec; test_charts.py renders it)."""
    path = ROOT / "rendered" / shipped.name / "installers" / "gpu-operator-values.yaml"
    values = yaml.safe_load(path.read_text(encoding="utf-8"))
    monitor = dcgm_service_monitor({"spec": values}, shipped.spec["monitoring"]["dcgmExporter"]["namespace"])
    assert monitor is not None, "the rendered values turn dcgm-exporter's ServiceMonitor off"
    return monitor


def utilization_board(shipped: Shipped) -> dict[str, Any]:
    for obj in shipped.objects:
        for key, text in (obj.get("data") or {}).items():
            if key.endswith("-utilization.json"):
                board: dict[str, Any] = json.loads(text)
                return board
    raise AssertionError("no utilization dashboard rendered")


@pytest.fixture(scope="module")
def shipped() -> Shipped:
    return load_shipped(ENV)


@pytest.fixture(scope="module")
def prometheus(shipped: Shipped, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    host_label = shipped.env.monitoring.host_label
    exporter = Background(
        QuietHTTPServer(("127.0.0.1", 0), exposition_handler(lambda: exposition(host_label)))
    )
    exporter.start()
    monitor = operator_monitor(shipped)
    job = servicemonitor.scrape_config(monitor, 0)
    assert job["honor_labels"] is True
    del job["kubernetes_sd_configs"]
    job["static_configs"] = [
        {"targets": [f"127.0.0.1:{exporter.port}"], "labels": endpoint_meta(monitor["metadata"]["namespace"])}
    ]
    config = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s"}, "scrape_configs": [job]}
    workdir: Path = tmp_path_factory.mktemp("utilization")
    served = prometheus_server(workdir, yaml.safe_dump(config, sort_keys=False))
    try:
        with served:
            wait_for_both_gpus(served, shipped)
            yield served
    finally:
        exporter.stop()


def wait_for_both_gpus(served: Prometheus, shipped: Shipped) -> None:
    selector = ExporterQueries(shipped.env.monitoring).dcgm("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")
    deadline = time.monotonic() + SERIES_SECONDS
    while len(served.query(selector)) < len(TENSOR):
        assert time.monotonic() < deadline, f"{selector}: not both GPUs after {SERIES_SECONDS} s"
        time.sleep(0.5)


def panel_exprs(board: dict[str, Any], title_start: str) -> list[str]:
    [panel] = [p for p in board["panels"] if p.get("title", "").startswith(title_start)]
    return [concrete(t["expr"]) for t in panel["targets"]]


def pods(result: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((r["metric"].get("namespace", ""), r["metric"].get("pod", "")) for r in result)


def test_honor_labels_gives_the_idle_gpu_the_exporter_pods_labels(
    prometheus: Prometheus, shipped: Shipped
) -> None:
    """The mechanism, seen in the stored series: the idle GPU carries the target's labels."""
    selector = ExporterQueries(shipped.env.monitoring).dcgm("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")
    by_gpu = {r["metric"]["gpu"]: r["metric"] for r in prometheus.query(selector)}
    operator_ns = shipped.spec["monitoring"]["dcgmExporter"]["namespace"]
    assert {k: by_gpu["1"][k] for k in HELD} == {
        "namespace": operator_ns,
        "pod": EXPORTER_POD,
        "container": EXPORTER_CONTAINER,
    }
    assert {k: by_gpu["0"][k] for k in HELD} == HELD


def test_stragglers_are_only_gpus_a_pod_holds(prometheus: Prometheus, shipped: Shipped) -> None:
    [expr] = panel_exprs(utilization_board(shipped), "Stragglers")
    result = prometheus.query(expr)
    assert pods(result) == [("research", "train-0")]
    assert [r["metric"]["gpu"] for r in result] == ["0"]


def test_the_old_selector_kept_the_idle_gpu(prometheus: Prometheus, shipped: Shipped) -> None:
    """The control: the straggler query with `namespace!=""` instead, on the same scrape."""
    [expr] = panel_exprs(utilization_board(shipped), "Stragglers")
    held = ExporterQueries(shipped.env.monitoring).held_by_pod()
    assert held in expr
    result = prometheus.query(expr.replace(held, 'namespace!=""'))
    operator_ns = shipped.spec["monitoring"]["dcgmExporter"]["namespace"]
    assert pods(result) == sorted([("research", "train-0"), (operator_ns, EXPORTER_POD)])


def test_per_job_panels_and_the_namespace_picker_see_only_the_pod(
    prometheus: Prometheus, shipped: Shipped
) -> None:
    board = utilization_board(shipped)
    for title in ("Jobs: busy vs working", "Tensor-core activity by namespace", "SM active by namespace"):
        for expr in panel_exprs(board, title):
            assert {ns for ns, _ in pods(prometheus.query(expr))} == {"research"}, (title, expr)
    [variable] = [v for v in board["templating"]["list"] if v["name"] == "namespace"]
    series = variable["query"].removeprefix("label_values(").removesuffix(")").rsplit(", ", 1)[0]
    assert pods(prometheus.query(f"count by (namespace) ({series})")) == [("research", "")]
