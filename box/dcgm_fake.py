"""A fake dcgm-exporter for the box. SYNTHETIC: no GPU, no DCGM, no driver; every value is made up.

The box has no GPUs, so the health controller's DCGM conditions would see nothing. This
process serves, for every node of the environment's NVIDIA pools, the series a real
dcgm-exporter would: the metric names are the counters of the rendered counters CSV
(`dcgmExporter.config.data` in rendered/<env>/installers/gpu-operator-values.yaml, the file
the pinned image reads), the labels are the exporter's GPU format, read in
NVIDIA/dcgm-exporter (main @1f7abdb):

- internal/pkg/rendermetrics/render_metrics.go `gpuMetricsFormat`: `gpu`, `UUID`,
  `pci_bus_id`, `device`, `modelName`, then the host label (`Hostname` = the node name,
  the label the rendered health queries map to `node`; the environment's
  `monitoring.exporters` decides which, generators/model/exporters.py), then the label-type
  counters (`DCGM_FI_DRIVER_VERSION`);
- internal/pkg/collector/expcollector.go: `DCGM_EXP_*` counts carry `window_size_in_ms`;
  xid_collector.go adds `xid="<code>"` per XID seen in the window, and a GPU with none
  has one series of value 0 without `xid`.

Values are a healthy idle GPU (45 C, nothing counted) until a scene sets a fault over HTTP:
`PUT /faults/<node>` with `{"gpuTemperature": 90}` (GPU 0 of the node reads it, the others
stay healthy) or `{"xid": 79}` (GPU 0 reports that XID once in the window), `DELETE /faults/<node>` or
`DELETE /faults` for healthy again, `GET /faults` for what is set. A real DaemonSet has one
exporter per node, scraped per pod; here one process serves every node, scraped as the job
the rendered queries select (`monitoring.selectors.dcgm`, scrape_job()).

Run: python -m box.dcgm_fake --fleet FLEET.json --port PORT (box up does).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from box.daemon import Daemon, free_port
from box.nodes import pool_nodes

if TYPE_CHECKING:
    from generators.model.environment import Environment

NAME = "dcgm-exporter-fake"  # the box's process name (state.json), scenes find its port by it
XID_COUNT = "DCGM_EXP_XID_ERRORS_COUNT"
XID_LAST = "DCGM_FI_DEV_XID_ERRORS"
TEMPERATURE = "DCGM_FI_DEV_GPU_TEMP"
HEALTHY_CELSIUS = 45
XID_WINDOW_MS = 300000  # dcgm-exporter's default --xid-count-window-size (5 minutes)
DRIVER_VERSION = "570.00.00-synthetic"
NVIDIA_GPU = "nvidia.com/gpu"  # pools with this resource run dcgm-exporter (gpu-operator)
ROOT = Path(__file__).resolve().parents[1]  # the checkout: `-m box.dcgm_fake` runs from it
_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


@dataclass(frozen=True)
class Counter:
    field: str
    kind: str  # gauge | counter | label
    help: str


@dataclass(frozen=True)
class GpuNode:
    name: str
    gpus: int
    model: str


@dataclass
class Fleet:
    """What the exporter serves: counters, nodes, the host label, and the faults set."""

    counters: tuple[Counter, ...]
    nodes: tuple[GpuNode, ...]
    host_label: str
    faults: dict[str, dict[str, int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _text: str | None = None  # the last render: values change only when a fault does
    _generation: int = 0  # bumped by every fault change, so a render racing one is not kept

    def metrics(self) -> str:
        """render(), cached until the faults change (a render of 72 nodes costs 0.2 s of CPU,
        every scrape, on a shared 2-core machine)."""
        with self.lock:
            text, generation = self._text, self._generation
        if text is None:
            text = render(self)
            with self.lock:
                if generation == self._generation:
                    self._text = text
        return text

    def set_fault(self, node: str, fault: dict[str, int] | None) -> None:
        """Set (None: clear) the fault of `node`, or of every node when `node` is empty."""
        with self.lock:
            if fault is not None:
                self.faults[node] = fault
            elif node:
                self.faults.pop(node, None)
            else:
                self.faults.clear()
            self._text = None
            self._generation += 1

    def to_json(self) -> dict[str, Any]:
        return {
            "hostLabel": self.host_label,
            "counters": [[c.field, c.kind, c.help] for c in self.counters],
            "nodes": [[n.name, n.gpus, n.model] for n in self.nodes],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Fleet:
        return cls(
            tuple(Counter(*c) for c in raw["counters"]),
            tuple(GpuNode(*n) for n in raw["nodes"]),
            raw["hostLabel"],
        )


def counters_of(gpu_operator_values: str) -> tuple[Counter, ...]:
    """The counters of the rendered gpu-operator values (`dcgmExporter.config.data`, the CSV
    `DCGM FIELD, Prometheus type, help`, '#' comments) in file order."""
    data = (yaml.safe_load(gpu_operator_values) or {})["dcgmExporter"]["config"]["data"]
    found = []
    for line in data.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, kind, help_text = (part.strip() for part in line.split(",", 2))
            found.append(Counter(name, kind, help_text))
    return tuple(found)


def fleet_of(env: Environment, gpu_operator_values: str) -> Fleet:
    """Every node of the environment's NVIDIA pools (the box's node names), its GPUs, and the
    rendered counters; the host label the environment's dcgm-exporter writes."""
    nodes = tuple(
        GpuNode(node["metadata"]["name"], pool.gpus_per_node, f"NVIDIA {pool.gpu_model}")
        for pool in env.pools
        if pool.gpu_resource == NVIDIA_GPU
        for node in pool_nodes(pool)
    )
    return Fleet(counters_of(gpu_operator_values), nodes, env.monitoring.host_label)


def daemon(fleet: Fleet, folder: Path) -> Daemon:
    """The exporter as a box process (not started), on a free loopback port."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fleet.json").write_text(json.dumps(fleet.to_json(), indent=1), encoding="utf-8")
    port = free_port()
    return Daemon(
        NAME,
        [
            sys.executable,
            "-m",
            "box.dcgm_fake",
            f"--fleet={folder / 'fleet.json'}",
            f"--port={port}",
        ],
        folder / f"{NAME}.log",
        ports=(port,),
        cwd=ROOT,
    )


def scrape_job(selector: str, port: int, interval: str) -> dict[str, Any]:
    """The Prometheus scrape job whose series match `selector` (monitoring.selectors.dcgm,
    e.g. `job="nvidia-dcgm-exporter"`): `job` is the job name, any other equality matcher a
    target label. Only equality matchers can be produced by a scrape; others are refused."""
    labels: dict[str, str] = {}
    rest = selector.strip()
    while rest:
        match = _MATCHER.match(rest)
        if match is None:
            raise ValueError(
                f"the box's fake dcgm-exporter matches only equality selectors "
                f'(label="value", ...), not {selector!r} (monitoring.selectors.dcgm)'
            )
        labels[match.group(1)] = match.group(2)
        rest = rest[match.end() :].strip()
    job = labels.pop("job", NAME)
    static: dict[str, Any] = {"targets": [f"127.0.0.1:{port}"]}
    if labels:
        static["labels"] = labels
    # honor_labels: the rendered ServiceMonitor keeps the exporter's labels as they are.
    return {"job_name": job, "scrape_interval": interval, "honor_labels": True, "static_configs": [static]}


def _gpu_labels(fleet: Fleet, node: GpuNode, gpu: int) -> list[tuple[str, str]]:
    index = fleet.nodes.index(node)
    labels = [
        ("gpu", str(gpu)),
        ("UUID", f"GPU-{index:08x}-0000-4000-8000-{gpu:012x}"),
        ("pci_bus_id", f"00000000:{0x18 + 0x10 * gpu:02X}:00.0"),
        ("device", f"nvidia{gpu}"),
        ("modelName", node.model),
        (fleet.host_label, node.name),
    ]
    labels += [(c.field, DRIVER_VERSION) for c in fleet.counters if c.kind == "label"]
    return labels


def _value(counter: Counter, fault: Mapping[str, int], gpu: int) -> int:
    if counter.field == TEMPERATURE:
        return fault.get("gpuTemperature", HEALTHY_CELSIUS) if gpu == 0 else HEALTHY_CELSIUS
    if counter.field == XID_LAST:
        return fault.get("xid", 0) if gpu == 0 else 0
    return 0  # idle: no clock events, errors, violations, traffic; 0 MiB used


def render(fleet: Fleet) -> str:
    """The /metrics text (Prometheus text format 0.0.4), as gpuMetricsFormat writes it."""
    with fleet.lock:
        faults = {node: dict(fault) for node, fault in fleet.faults.items()}
    out: list[str] = []
    for counter in fleet.counters:
        if counter.kind == "label":
            continue  # a label of every series, not a series (counters.LabelCounters)
        out += [f"# HELP {counter.field} {counter.help}", f"# TYPE {counter.field} {counter.kind}"]
        for node in fleet.nodes:
            fault = faults.get(node.name, {})
            for gpu in range(node.gpus):
                labels = _gpu_labels(fleet, node, gpu)
                if counter.field.startswith("DCGM_EXP_"):
                    labels.append(("window_size_in_ms", str(XID_WINDOW_MS)))
                value = _value(counter, fault, gpu)
                if counter.field == XID_COUNT and gpu == 0 and "xid" in fault:
                    labels.append(("xid", str(fault["xid"])))
                    value = 1
                text = ",".join(f'{k}="{v}"' for k, v in labels)
                out.append(f"{counter.field}{{{text}}} {value}")
    return "\n".join(out) + "\n"


def _known_fault(body: Any) -> dict[str, int]:
    if not isinstance(body, dict) or not body or set(body) - {"gpuTemperature", "xid"}:
        raise ValueError('a fault is {"gpuTemperature": <celsius>} and/or {"xid": <code>}')
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in body.values()):
        raise ValueError("fault values are integers")
    return dict(body)


class _Handler(BaseHTTPRequestHandler):
    fleet: Fleet  # set on the subclass serve() makes

    def _send(self, code: int, text: str, kind: str = "application/json") -> None:
        body = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _node(self) -> str | None:
        parts = self.path.strip("/").split("/")
        if parts[0] != "faults" or len(parts) > 2:
            return None
        return parts[1] if len(parts) == 2 else ""

    def do_GET(self) -> None:  # http.server's name
        if self.path == "/metrics":
            self._send(200, self.fleet.metrics(), "text/plain; version=0.0.4; charset=utf-8")
        elif self.path in ("/health", "/healthz"):
            self._send(200, "ok", "text/plain")
        elif self.path == "/faults":
            with self.fleet.lock:
                self._send(200, json.dumps(self.fleet.faults, sort_keys=True))
        else:
            self._send(404, '{"error": "not found"}')

    def do_PUT(self) -> None:
        node = self._node()
        names = {n.name for n in self.fleet.nodes}
        if not node or node not in names:
            self._send(404, json.dumps({"error": f"no GPU node {node!r}"}))
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            fault = _known_fault(json.loads(self.rfile.read(length) or b"null"))
        except ValueError as err:
            self._send(400, json.dumps({"error": str(err)}))
            return
        self.fleet.set_fault(node, fault)
        self._send(200, json.dumps({node: fault}))

    def do_DELETE(self) -> None:
        node = self._node()
        if node is None:
            self._send(404, '{"error": "not found"}')
            return
        self.fleet.set_fault(node, None)
        self._send(200, "{}")

    def log_message(self, format: str, *args: Any) -> None:
        if not self.path.startswith("/metrics"):  # scrapes every few seconds: not worth a line
            super().log_message(format, *args)


def serve(fleet: Fleet, port: int, address: str = "127.0.0.1") -> ThreadingHTTPServer:
    """A server (not yet serving) for `fleet` on address:port."""
    handler = type("FleetHandler", (_Handler,), {"fleet": fleet})
    return ThreadingHTTPServer((address, port), handler)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dcgm_fake", description=__doc__.splitlines()[0])
    parser.add_argument("--fleet", type=Path, required=True, help="the fleet JSON box up writes")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    fleet = Fleet.from_json(json.loads(args.fleet.read_text(encoding="utf-8")))
    server = serve(fleet, args.port)
    server.serve_forever()  # until SIGTERM (box down stops the process group)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
