"""One environment's monitoring path, live: the chart's objects on the test apiserver, the
real exporters, and a Prometheus scraping them with the operator's scrape configs.

`running(env)` renders kube-prometheus-stack with rendered/<env>/installers' values,
creates nodes shaped like the environment's pools (scrape_cluster), the chart's
node-exporter pods on every node its DaemonSet would run on, kube-state-metrics on the
system node, their Services and Endpoints, one inference pod holding GPU_POD_REQUEST GPUs
on the inference pool's first node, and starts the processes (scrape_processes). Then the
InfiniBand scene, on the first pool with HCAs (`rdma/ib`):
- `<pool>-001`: PORT_DOWN_DEVICE's port is DOWN/Disabled from the start;
- `<pool>-000`: LINK_ERRORS_DEVICE's symbol_error counter reads 0, and once Prometheus has
  that sample it jumps to LINK_ERRORS (a burst of errors between two scrapes).
Every wait is on a condition Prometheus reports (targets up, series present, values seen).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from box.daemon import Daemon
from box.kube import Kube, wait_for
from generators.k8s.objects import Obj
from generators.model.environment import Environment
from generators.model.load import load
from generators.model.types import Pool
from tests.monitoring import scrape_cluster as cluster
from tests.monitoring import scrape_processes as procs
from tests.monitoring.stack_chart import KSM_SOURCE, NODE_EXPORTER_SOURCE, Rendered, render, values_file
from tests.support import ROOT
from tests.support.prometheus import Prometheus

WORKLOADS = "trainyard-scrape"  # namespace of the inference pod
PORT_DOWN_DEVICE = "mlx5_3"
LINK_ERRORS_DEVICE, LINK_ERRORS = "mlx5_0", 500
SERIES_SECONDS = 90  # discovery + first scrapes on 2 busy cores


@dataclass
class Stack:
    env: Environment
    chart: Rendered
    plans: list[cluster.NodePlan]
    prometheus: Prometheus
    exporter_nodes: list[str]  # nodes with a node-exporter pod
    values: Path  # the chart values the stack was rendered with

    def pool_nodes(self, pool: Pool) -> list[str]:
        return [p.name for p in self.plans if p.pool is pool]


def ib_pool(env: Environment) -> Pool:
    return next(p for p in env.pools if p.per_node.get(cluster.IB_RESOURCE))


def inference_pool(env: Environment) -> Pool:
    return next(p for p in env.pools if p.role == "inference")


def _clean(obj: Any) -> Any:
    """The object without null fields (helm leaves `annotations:` empty)."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


def _create_workloads(
    created: cluster.Created, chart: Rendered, plans: list[cluster.NodePlan]
) -> tuple[list[Obj], list[Obj]]:
    """The node-exporter pods (one per node the DaemonSet selects) and the kube-state-metrics
    pod, each Service and its Endpoints."""
    daemonset = chart.one(NODE_EXPORTER_SOURCE, "DaemonSet")
    deployment = chart.one(KSM_SOURCE, "Deployment")
    exporters = []
    for plan in cluster.daemonset_nodes(daemonset["spec"]["template"], plans):
        name = f"{daemonset['metadata']['name']}-{plan.name}"
        pod, status = cluster.pod_from_template(daemonset, name, plan.name, plan.address, plan.address)
        exporters.append(created.create(_clean(pod), status))
    system = plans[0]
    pod, status = cluster.pod_from_template(
        deployment, f"{deployment['metadata']['name']}-0", system.name, f"{cluster.SUBNET}200", system.address
    )
    ksm = [created.create(_clean(pod), status)]
    for source, members in ((NODE_EXPORTER_SOURCE, exporters), (KSM_SOURCE, ksm)):
        service = created.create(_clean(chart.one(source, "Service")))
        created.create(cluster.endpoints_for(service, members))
    return exporters, ksm


def _wait_scraped(prometheus: Prometheus, targets: int, hcas: int) -> None:
    """Until every target is up and the first InfiniBand samples are in."""

    def all_up() -> bool:
        found = prometheus.active_targets()
        return len(found) == targets and all(t["health"] == "up" for t in found)

    wait_for(all_up, SERIES_SECONDS, f"{targets} targets up", interval=0.5)
    wait_for(
        lambda: len(prometheus.query("node_infiniband_symbol_error_total")) == hcas,
        SERIES_SECONDS,
        f"{hcas} InfiniBand ports scraped",
        interval=0.5,
    )


def _stop_all(daemons: list[Daemon]) -> None:
    for daemon in reversed(daemons):
        daemon.stop()


def _burst(prometheus: Prometheus, sysfs: procs.FakeSysfs) -> None:
    """Symbol errors between two scrapes (the 0 sample is in: _wait_scraped)."""
    sysfs.counter(LINK_ERRORS_DEVICE, "symbol_error", LINK_ERRORS)
    wait_for(
        lambda: prometheus.query(f"max(node_infiniband_symbol_error_total) == {LINK_ERRORS}"),
        SERIES_SECONDS,
        "the symbol_error burst scraped",
        interval=0.5,
    )


@contextmanager
def running(
    env_name: str, kube: Kube, kubeconfig: Path, workdir: Path, values: Path | None = None
) -> Iterator[Stack]:
    """The stack for `env_name`, with `values` for the chart (default: the rendered ones)."""
    env = load(ROOT, env_name)
    values = values or values_file(env_name)
    chart = render(env_name, values)
    daemonset = chart.one(NODE_EXPORTER_SOURCE, "DaemonSet")
    deployment = chart.one(KSM_SOURCE, "Deployment")
    plans = cluster.plan_nodes(env)
    created = cluster.Created(kube)
    with ExitStack() as stack:  # undone in reverse: processes, the proxy, the objects
        stack.callback(created.delete_all)
        network = procs.PodNetwork()
        stack.callback(network.close)
        daemons: list[Daemon] = []
        stack.callback(_stop_all, daemons)
        created.namespace(chart.namespace)
        created.namespace(WORKLOADS)
        for plan in plans:
            created.node(plan)
        exporters, ksm = _create_workloads(created, chart, plans)
        inference = inference_pool(env)
        pod, status = cluster.gpu_pod(
            WORKLOADS, f"{inference.name}-000", inference.gpu_resource, cluster.GPU_POD_REQUEST
        )
        created.create(pod, status)
        on_node = {p["spec"]["nodeName"] for p in exporters}
        sysfs = {
            p.name: procs.FakeSysfs(workdir / "sysfs" / p.name, p.hcas) for p in plans if p.name in on_node
        }
        broken = ib_pool(env).name
        sysfs[f"{broken}-001"].port(PORT_DOWN_DEVICE, "1: DOWN", "3: Disabled")
        pod_ip = ksm[0]["status"]["podIP"]
        daemons.append(procs.kube_state_metrics(deployment, network, pod_ip, kubeconfig, workdir))
        for plan in plans:
            if plan.name in sysfs:
                daemons.append(procs.node_exporter(daemonset, network, plan, sysfs[plan.name].root, workdir))
        monitors = [chart.one(source, "ServiceMonitor") for source in (NODE_EXPORTER_SOURCE, KSM_SOURCE)]
        prometheus = procs.prometheus(monitors, network, kubeconfig, workdir)
        daemons.append(prometheus.daemon)
        _wait_scraped(prometheus, len(exporters) + len(ksm), sum(p.hcas for p in plans if p.name in sysfs))
        _burst(prometheus, sysfs[f"{broken}-000"])
        yield Stack(env, chart, plans, prometheus, sorted(on_node), values)
