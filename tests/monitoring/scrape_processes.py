"""The processes of the live scrape: kube-state-metrics, one node_exporter per node, Prometheus.

Each runs with the args of the chart's container (kube-prometheus-stack 88.5.3 as
`helm template` renders it with an environment's values), changed only where a process
outside a pod must be told what a pod gets for free, each change named below:
- kube-state-metrics (pinned v2.17.0, built from ../shared/src; the chart's image is
  v2.20.0, docs/monitoring.md lists both as checked): `--kubeconfig` (no in-cluster
  config), `--host`/`--telemetry-host` = its pod address (in a pod it listens on every
  address of its own network namespace; here that is one loopback address);
- node_exporter (pinned v1.12.1, the chart's version): the DaemonSet's hostPath mounts
  undone (`/host/proc` -> `/proc`, `/host/root` -> `/`), `$(HOST_IP)` = its node's address
  (the chart sets 0.0.0.0: every address of the host; here the host's address is the
  node's), and `/host/sys` -> a per-node sysfs tree: every entry of this machine's /sys by
  symlink except `class/infiniband`, which holds the node's HCAs as files the test writes.
  This host has no InfiniBand: those values are SYNTHETIC, but they are read by
  node_exporter's own infiniband collector through procfs' sysfs parser
  (`sysfs/class_infiniband.go` of prometheus/procfs v0.21.1), the file layout being the
  kernel's (Documentation/ABI/stable/sysfs-class-infiniband);
- Prometheus (pinned v3.16.0; the chart's is v3.14.0): the operator's scrape configs with
  `kubeconfig_file` in kubernetes_sd (the operator relies on in-cluster config), a 1 s
  scrape interval instead of the chart's 30 s so the test waits seconds, not minutes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import yaml

from tests.controlplane.daemon import Daemon, free_port
from tests.monitoring import servicemonitor
from tests.monitoring.scrape_cluster import NodePlan
from tools.toolchain import tool_path

Obj = dict[str, Any]
READY_SECONDS = 60
SCRAPE_INTERVAL = "1s"
FAKE_SYSFS_MOUNT = "/host/sys"  # the chart's mountPath of the host's /sys
# A ConnectX-7 (MT4129) as the kernel's mlx5 driver shows it.
DEVICE_FILES = (("fw_ver", "28.39.1002"), ("board_id", "MT_0000000838"), ("hca_type", "MT4129"))


def container(workload: Obj) -> Obj:
    [only] = workload["spec"]["template"]["spec"]["containers"]
    return dict(only)


def container_port(workload: Obj, name: str) -> int:
    port: int = next(p["containerPort"] for p in container(workload)["ports"] if p["name"] == name)
    return port


def _probe_url(workload: Obj, address: str) -> str:
    """The chart's readinessProbe as a URL on `address`: what the kubelet would ask."""
    probe = container(workload)["readinessProbe"]["httpGet"]
    port = probe["port"] if isinstance(probe["port"], int) else container_port(workload, probe["port"])
    return f"http://{address}:{port}{probe.get('path', '/')}"


def _ready(url: str) -> bool:
    return requests.get(url, timeout=2).status_code == 200


def kube_state_metrics(deployment: Obj, address: str, kubeconfig: Path, workdir: Path) -> Daemon:
    args = container(deployment)["args"]
    assert not any(a.startswith(("--host", "--telemetry-host", "--kubeconfig")) for a in args), args
    daemon = Daemon("kube-state-metrics",
                    [str(tool_path("kube-state-metrics")), *args, f"--host={address}",
                     f"--telemetry-host={address}", f"--kubeconfig={kubeconfig}"],
                    workdir / "kube-state-metrics.log")  # fmt: skip
    daemon.start()
    daemon.wait_until(lambda: _ready(_probe_url(deployment, address)), READY_SECONDS, "readinessProbe ok")
    return daemon


def node_exporter_args(daemonset: Obj, address: str, sysfs: Path) -> list[str]:
    """The DaemonSet container's args with the mounts undone and $(HOST_IP) set (see above)."""
    spec = daemonset["spec"]["template"]["spec"]
    host_paths = {v["name"]: v["hostPath"]["path"] for v in spec.get("volumes") or [] if "hostPath" in v}
    mounts = {m["mountPath"]: host_paths[m["name"]] for m in container(daemonset).get("volumeMounts") or []}
    mounts[FAKE_SYSFS_MOUNT] = str(sysfs)
    env = {e["name"]: address for e in container(daemonset).get("env") or [] if e["name"] == "HOST_IP"}
    args = []
    for arg in container(daemonset)["args"]:
        arg = re.sub(r"\$\((\w+)\)", lambda m: env[m[1]], arg)
        flag, sep, value = arg.partition("=")
        for mount in sorted(mounts, key=len, reverse=True):
            if value == mount or value.startswith(mount + "/"):
                value = (mounts[mount].rstrip("/") + value[len(mount):]) or "/"
                break
        args.append(flag + sep + value)
    assert any(a.startswith("--path.sysfs=") and a.endswith(str(sysfs)) for a in args), args
    return args


def node_exporter(daemonset: Obj, plan: NodePlan, sysfs: Path, workdir: Path) -> Daemon:
    daemon = Daemon(f"node_exporter {plan.name}",
                    [str(tool_path("node_exporter")), *node_exporter_args(daemonset, plan.address, sysfs)],
                    workdir / f"node_exporter-{plan.name}.log")  # fmt: skip
    daemon.start()
    daemon.wait_until(lambda: _ready(_probe_url(daemonset, plan.address)), READY_SECONDS, "readinessProbe ok")
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
            for counter in ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
                            "excessive_buffer_overrun_errors", "local_link_integrity_errors"):  # fmt: skip
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


@dataclass
class Prometheus:
    daemon: Daemon
    url: str

    def query(self, expr: str) -> list[Obj]:
        body = requests.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=10).json()
        assert body["status"] == "success", body
        result: list[Obj] = body["data"]["result"]
        return result

    def active_targets(self) -> list[Obj]:
        body = requests.get(f"{self.url}/api/v1/targets", params={"state": "active"}, timeout=10).json()
        targets: list[Obj] = body["data"]["activeTargets"]
        return targets


def prometheus(monitors: list[Obj], kubeconfig: Path, workdir: Path) -> Prometheus:
    """The pinned Prometheus with the operator's scrape config for endpoint 0 of each monitor."""
    sd = {"kubeconfig_file": str(kubeconfig)}
    config = {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "scrape_timeout": SCRAPE_INTERVAL,
                   "evaluation_interval": SCRAPE_INTERVAL},
        "scrape_configs": [servicemonitor.scrape_config(m, i, sd) for m in monitors
                           for i in range(len(m["spec"]["endpoints"]))],
    }  # fmt: skip
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    port = free_port()
    daemon = Daemon("prometheus",
                    [str(tool_path("prometheus")), f"--config.file={workdir / 'prometheus.yml'}",
                     f"--storage.tsdb.path={workdir / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
                     "--log.level=warn"],
                    workdir / "prometheus.log", ports=(port,), cwd=workdir)  # fmt: skip
    daemon.start()
    url = f"http://127.0.0.1:{port}"
    daemon.wait_until(lambda: _ready(f"{url}/-/ready"), READY_SECONDS, "/-/ready")
    return Prometheus(daemon, url)
