"""The processes of the live scrape: kube-state-metrics, one node_exporter per node, Prometheus.

Each runs with the args of the chart's container (kube-prometheus-stack 88.5.3 as
`helm template` renders it with an environment's values), changed only where a process
outside a pod must be told what a pod gets for free, each change named below. Every
process listens on 127.0.0.1 on a free port; PodNetwork, a forwarding HTTP proxy standing
in for the pod network, maps the address:port a target has in the cluster (its Endpoints)
to it, and Prometheus scrapes through it (`proxy_url`, what a ServiceMonitor endpoint's
`proxyUrl` renders to: promcfg.go `addProxyConfigtoYaml`), so targets, `__address__` and
`instance` are the cluster's.
- kube-state-metrics (pinned v2.17.0, built from ../shared/src; the chart's image is
  v2.20.0, docs/monitoring.md lists both as checked): `--kubeconfig` (no in-cluster
  config), the chart's `--port` and the default telemetry port replaced by the local ones
  (`--host`/`--telemetry-host` 127.0.0.1);
- node_exporter (pinned v1.12.1, the chart's version): the DaemonSet's hostPath mounts
  undone (`/host/proc` -> `/proc`, `/host/root` -> `/`), `--web.listen-address`
  (`[$(HOST_IP)]:9100`, HOST_IP 0.0.0.0) the local one, and `/host/sys` -> a per-node sysfs
  tree: every entry of this machine's /sys by
  symlink except `class/infiniband`, which holds the node's HCAs as files the test writes.
  This host has no InfiniBand: those values are SYNTHETIC, but they are read by
  node_exporter's own infiniband collector through procfs' sysfs parser
  (`sysfs/class_infiniband.go` of prometheus/procfs v0.21.1), the file layout being the
  kernel's (Documentation/ABI/stable/sysfs-class-infiniband);
- Prometheus (pinned v3.16.0; the chart's is v3.14.0): the operator's scrape configs with
  `kubeconfig_file` in kubernetes_sd (the operator relies on in-cluster config), a 2 s
  scrape interval instead of the chart's 30 s so the test waits seconds, not minutes.
"""

from __future__ import annotations

import http.client
import os
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import requests
import yaml

from box.daemon import Daemon, free_port
from box.httpd import Background
from generators.k8s.objects import Obj
from tests.monitoring import servicemonitor
from tests.monitoring.scrape_cluster import NodePlan
from tests.support import tool
from tests.support.httpserver import QuietHTTPServer
from tests.support.prometheus import Prometheus, prometheus_server

READY_SECONDS = 60
SCRAPE_INTERVAL = "2s"  # node_exporter scrapes took up to 0.31 s here: 6x margin on 2 busy cores
FAKE_SYSFS_MOUNT = "/host/sys"  # the chart's mountPath of the host's /sys
# A ConnectX-7 (MT4129) as the kernel's mlx5 driver shows it.
DEVICE_FILES = (("fw_ver", "28.39.1002"), ("board_id", "MT_0000000838"), ("hca_type", "MT4129"))


def container(workload: Obj) -> Obj:
    [only] = workload["spec"]["template"]["spec"]["containers"]
    return dict(only)


def container_port(workload: Obj, name: str) -> int:
    port: int = next(p["containerPort"] for p in container(workload)["ports"] if p["name"] == name)
    return port


@dataclass
class PodNetwork:
    """A forwarding proxy: `http://<address>:<port>/...` -> 127.0.0.1:`routes[(address, port)]`."""

    routes: dict[tuple[str, int], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        network = self

        class Forward(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                target = urllib.parse.urlsplit(self.path)
                local = network.routes.get((target.hostname or "", target.port or 80))
                if local is None:
                    self.send_error(502, f"no route to {target.netloc}")
                    return
                upstream = http.client.HTTPConnection("127.0.0.1", local, timeout=10)
                try:
                    keep = ("Accept", "Accept-Encoding", "User-Agent", "X-Prometheus-Scrape-Timeout-Seconds")
                    headers = {k: v for k, v in self.headers.items() if k in keep}
                    upstream.request(
                        "GET", target.path + (f"?{target.query}" if target.query else ""), headers=headers
                    )
                    response = upstream.getresponse()
                    body = response.read()
                    self.send_response(response.status)
                    for key in ("Content-Type", "Content-Encoding"):
                        if response.getheader(key):
                            self.send_header(key, str(response.getheader(key)))
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                finally:
                    upstream.close()

            def log_message(self, format: str, *args: object) -> None:
                pass  # a line per scrape would drown the log

        self._serving = Background(QuietHTTPServer(("127.0.0.1", 0), Forward)).start()
        self.url = f"http://127.0.0.1:{self._serving.port}"

    def route(self, address: str, port: int) -> int:
        """A free local port for `address:port` (where the process must listen)."""
        local = free_port()
        self.routes[(address, port)] = local
        return local

    def close(self) -> None:
        self._serving.stop()


def _probe_url(workload: Obj, network: PodNetwork, address: str) -> str:
    """The chart's readinessProbe, sent through the pod network: what the kubelet would ask."""
    probe = container(workload)["readinessProbe"]["httpGet"]
    port = probe["port"] if isinstance(probe["port"], int) else container_port(workload, probe["port"])
    return f"http://127.0.0.1:{network.routes[(address, port)]}{probe.get('path', '/')}"


def _ready(url: str) -> bool:
    return requests.get(url, timeout=2).status_code == 200


def kube_state_metrics(
    deployment: Obj, network: PodNetwork, pod_ip: str, kubeconfig: Path, workdir: Path
) -> Daemon:
    http_port = network.route(pod_ip, container_port(deployment, "http"))
    telemetry_port = network.route(pod_ip, container_port(deployment, "metrics"))
    args = [a for a in container(deployment)["args"] if not a.startswith("--port=")]
    assert len(args) == len(container(deployment)["args"]) - 1, "one --port in the chart's args"
    assert not any(a.startswith(("--host", "--telemetry", "--kubeconfig")) for a in args), args
    daemon = Daemon(
        "kube-state-metrics",
        [
            str(tool("kube-state-metrics")),
            *args,
            "--host=127.0.0.1",
            f"--port={http_port}",
            "--telemetry-host=127.0.0.1",
            f"--telemetry-port={telemetry_port}",
            f"--kubeconfig={kubeconfig}",
        ],
        workdir / "kube-state-metrics.log",
        ports=(http_port, telemetry_port),
    )
    daemon.start()
    ready = _probe_url(deployment, network, pod_ip)
    daemon.wait_until(lambda: _ready(ready), READY_SECONDS, "readinessProbe ok")
    return daemon


def node_exporter_args(daemonset: Obj, listen: str, sysfs: Path) -> list[str]:
    """The DaemonSet container's args with the mounts undone, listening on `listen`."""
    spec = daemonset["spec"]["template"]["spec"]
    host_paths = {v["name"]: v["hostPath"]["path"] for v in spec.get("volumes") or [] if "hostPath" in v}
    mounts = {m["mountPath"]: host_paths[m["name"]] for m in container(daemonset).get("volumeMounts") or []}
    mounts[FAKE_SYSFS_MOUNT] = str(sysfs)
    args = []
    for arg in container(daemonset)["args"]:
        flag, sep, value = arg.partition("=")
        if flag == "--web.listen-address":
            value = listen
        for mount in sorted(mounts, key=len, reverse=True):
            if value == mount or value.startswith(mount + "/"):
                value = (mounts[mount].rstrip("/") + value[len(mount) :]) or "/"
                break
        args.append(flag + sep + value)
    assert f"--path.sysfs={sysfs}" in args and f"--web.listen-address={listen}" in args, args
    return args


def node_exporter(daemonset: Obj, network: PodNetwork, plan: NodePlan, sysfs: Path, workdir: Path) -> Daemon:
    # hostNetwork: the pod's address is its node's.
    local = network.route(plan.address, container_port(daemonset, "http-metrics"))
    args = node_exporter_args(daemonset, f"127.0.0.1:{local}", sysfs)
    daemon = Daemon(
        f"node_exporter {plan.name}",
        [str(tool("node_exporter")), *args],
        workdir / f"node_exporter-{plan.name}.log",
        ports=(local,),
    )
    daemon.start()
    ready = _probe_url(daemonset, network, plan.address)
    daemon.wait_until(lambda: _ready(ready), READY_SECONDS, "readinessProbe ok")
    return daemon


class FakeSysfs:
    """One node's sysfs: the machine's /sys by symlink, plus `class/infiniband` as files."""

    def __init__(self, root: Path, hcas: int) -> None:
        self.root = root
        (root / "class").mkdir(parents=True)
        for entry in Path("/sys").iterdir():
            if entry.name != "class":
                (root / entry.name).symlink_to(entry)
        for entry in Path("/sys/class").iterdir():
            if entry.name != "infiniband":
                (root / "class" / entry.name).symlink_to(entry)
        for index in range(hcas):
            device = root / "class" / "infiniband" / f"mlx5_{index}"
            port = device / "ports" / "1"
            (port / "counters").mkdir(parents=True)
            for name, text in DEVICE_FILES:
                (device / name).write_text(text + "\n")
            (port / "link_layer").write_text("InfiniBand\n")
            (port / "rate").write_text("400 Gb/sec (4X NDR)\n")
            self.port(f"mlx5_{index}", "4: ACTIVE", "5: LinkUp")
            for counter in (
                "symbol_error",
                "link_error_recovery",
                "link_downed",
                "port_rcv_errors",
                "excessive_buffer_overrun_errors",
                "local_link_integrity_errors",
            ):
                self.counter(f"mlx5_{index}", counter, 0)

    def _write(self, path: Path, text: str) -> None:
        # Atomic: node_exporter must never read a half-written file.
        scratch = path.with_name(path.name + ".tmp")
        scratch.write_text(text + "\n")
        os.replace(scratch, path)

    def port(self, device: str, state: str, phys_state: str) -> None:
        """`state`/`phys_state` as the kernel writes them, e.g. "4: ACTIVE", "5: LinkUp"."""
        port = self.root / "class" / "infiniband" / device / "ports" / "1"
        self._write(port / "state", state)
        self._write(port / "phys_state", phys_state)

    def counter(self, device: str, name: str, value: int) -> None:
        counters = self.root / "class" / "infiniband" / device / "ports" / "1" / "counters"
        self._write(counters / name, str(value))


def prometheus(monitors: list[Obj], network: PodNetwork, kubeconfig: Path, workdir: Path) -> Prometheus:
    """The pinned Prometheus with the operator's scrape config for every endpoint of each
    monitor, through the pod network."""
    sd = {"kubeconfig_file": str(kubeconfig)}
    jobs = [
        {**servicemonitor.scrape_config(m, i, sd), "proxy_url": network.url}
        for m in monitors
        for i in range(len(m["spec"]["endpoints"]))
    ]
    config = {
        "global": {
            "scrape_interval": SCRAPE_INTERVAL,
            "scrape_timeout": SCRAPE_INTERVAL,
            "evaluation_interval": SCRAPE_INTERVAL,
        },
        "scrape_configs": jobs,
    }
    served = prometheus_server(workdir, yaml.safe_dump(config, sort_keys=False))
    served.start()
    return served
