"""A rendered controller Deployment, run as a host process beside the box.

The box has no container runtime, so the pod the Deployment makes is a KWOK pod that runs
nothing. Its container runs here instead, as it is rendered: the program of its image (a
pinned build of tools/install.py, or the project's own gate from gate/), the container's
arguments, every ConfigMap volume written to a folder and the arguments' mount paths pointed
there, authenticated as the pod's ServiceAccount with a token the apiserver issued, so the
rendered RBAC is what it may do.

What a process on a shared host needs differently, and nothing else: its kubeconfig, its
listeners on free loopback ports (given after the rendered arguments, so they win: pflag and
argparse keep the last value), and in-cluster Service addresses in its configuration files
replaced by the box's processes (`services`, e.g. the Prometheus the gate queries), since
there is no cluster DNS or Service network.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from box.daemon import Daemon, free_port
from box.kube import Obj
from tools.toolchain import tool_path

GATE_DIR = Path(__file__).resolve().parents[1] / "gate"  # the gate's package (trainyard_gate)


@dataclass(frozen=True)
class Program:
    """How to run one image's program on the host."""

    argv: Callable[[], list[str]]  # the executable (and fixed leading arguments)
    kubeconfig: Callable[[Path], list[str]]
    listeners: Callable[[list[int]], list[str]]  # the first port serves the health check
    health: str  # URL of the health check, {port} filled in
    ports: int = 1
    env: Mapping[str, str] = field(default_factory=dict)


def _pinned(tool: str) -> Callable[[], list[str]]:
    return lambda: [str(tool_path(tool))]


DESCHEDULER = Program(
    _pinned("descheduler"),
    lambda path: [f"--kubeconfig={path}"],
    lambda ports: [f"--secure-port={ports[0]}"],
    "https://127.0.0.1:{port}/healthz",
)
# The chart's image is v2.20.0; the pinned build is v2.17.0, the version the environments
# declare (monitoring.exporters.kubeStateMetrics) and their label names follow.
KUBE_STATE_METRICS = Program(
    _pinned("kube-state-metrics"),
    lambda path: [f"--kubeconfig={path}"],
    lambda ports: [
        "--host=127.0.0.1",
        f"--port={ports[0]}",
        "--telemetry-host=127.0.0.1",
        f"--telemetry-port={ports[1]}",
    ],
    "http://127.0.0.1:{port}/healthz",
    ports=2,
)
# The gate and the health controller: one image, `python -m trainyard_gate` (gate/Dockerfile).
TRAINYARD_GATE = Program(
    lambda: [sys.executable, "-m", "trainyard_gate"],
    lambda path: [f"--kubeconfig={path}"],
    lambda ports: [f"--metrics-port={ports[0]}", "--metrics-address=127.0.0.1"],
    "http://127.0.0.1:{port}/metrics",
    env={"PYTHONPATH": str(GATE_DIR)},
)

# image repository -> program, for the upstream images whose repository is fixed.
IMAGE_PROGRAMS: dict[str, Program] = {
    "registry.k8s.io/descheduler/descheduler": DESCHEDULER,
    "registry.k8s.io/kube-state-metrics/kube-state-metrics": KUBE_STATE_METRICS,
}


def repository(deployment: Obj) -> str:
    image: str = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    name = image.split("@", 1)[0]
    return name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name


def mounted_config(
    deployment: Obj, objects: list[Obj], folder: Path, services: Mapping[str, str]
) -> dict[str, Path]:
    """Write each ConfigMap volume of the pod into `folder` (Service addresses replaced);
    mount path -> local folder."""
    template = deployment["spec"]["template"]["spec"]
    namespace = deployment["metadata"]["namespace"]
    config_maps = {
        o["metadata"]["name"]: o
        for o in objects
        if o["kind"] == "ConfigMap" and o["metadata"].get("namespace") == namespace
    }
    volumes = {v["name"]: v["configMap"]["name"] for v in template.get("volumes") or [] if "configMap" in v}
    mounts = {}
    for mount in template["containers"][0].get("volumeMounts") or []:
        if mount["name"] in volumes:
            local = folder / mount["name"]
            local.mkdir(parents=True, exist_ok=True)
            for key, text in (config_maps[volumes[mount["name"]]].get("data") or {}).items():
                for address, replacement in services.items():
                    text = text.replace(address, replacement)
                (local / key).write_text(text, encoding="utf-8")
            mounts[mount["mountPath"]] = local
    return mounts


def host_process(
    deployment: Obj,
    objects: list[Obj],
    program: Program,
    kubeconfig: Path,
    folder: Path,
    services: Mapping[str, str] | None = None,
) -> Daemon:
    """A Daemon (not started) running the Deployment's container with its rendered arguments."""
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    folder.mkdir(parents=True, exist_ok=True)
    mounts = mounted_config(deployment, objects, folder / "mounts", services or {})
    args = []
    for arg in container.get("args") or []:
        for mount_path, local in mounts.items():
            arg = arg.replace(mount_path.rstrip("/") + "/", f"{local}/")
        args.append(arg)
    ports = [free_port() for _ in range(program.ports)]
    name = deployment["metadata"]["name"]
    argv = [*program.argv(), *args, *program.kubeconfig(kubeconfig), *program.listeners(ports)]
    env = {**os.environ, **program.env} if program.env else None
    return Daemon(name, argv, folder / f"{name}.log", ports=ports, env=env, cwd=folder)


def health_url(program: Program, daemon: Daemon) -> str:
    return program.health.format(port=daemon.ports[0])
