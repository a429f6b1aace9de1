"""A rendered controller Deployment, run as a host process beside the box.

The box has no container runtime, so the pod the Deployment makes is a KWOK pod that runs
nothing. Its container runs here instead, as it is rendered: the pinned binary of its image
(IMAGE_TOOLS), the container's command-line arguments, every ConfigMap volume written to a
folder and the arguments' mount paths pointed there, authenticated as the pod's
ServiceAccount with a token the apiserver issued, so the rendered RBAC is what it may do.
The only arguments added are the ones a process on a shared host needs: the kubeconfig, and
its listener on a free loopback port instead of the container port.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from generators.box.daemon import Daemon, free_port
from generators.box.kube import Obj

# image repository -> pinned tool (tools/toolchain.py PINS) that is the same program.
IMAGE_TOOLS = {
    "registry.k8s.io/descheduler/descheduler": "descheduler",
    # The chart's image is v2.20.0; the pinned build is v2.17.0, the version the environments
    # declare (monitoring.exporters.kubeStateMetrics) and their label names follow.
    "registry.k8s.io/kube-state-metrics/kube-state-metrics": "kube-state-metrics",
}


@dataclass(frozen=True)
class HostArgs:
    """How a program takes the two host-only arguments."""

    kubeconfig: Callable[[Path], str]
    # the listeners on free loopback ports (the first one is the health/metrics endpoint);
    # given after the rendered arguments, so they win (pflag: the last value counts)
    listeners: Callable[[list[int]], list[str]]
    ports: int = 1


HOST_ARGS = {
    "descheduler": HostArgs(lambda path: f"--kubeconfig={path}", lambda ports: [f"--secure-port={ports[0]}"]),
    "kube-state-metrics": HostArgs(
        lambda path: f"--kubeconfig={path}",
        lambda ports: ["--host=127.0.0.1", f"--port={ports[0]}", "--telemetry-host=127.0.0.1",
                       f"--telemetry-port={ports[1]}"],
        ports=2),
}  # fmt: skip


def image_tool(deployment: Obj) -> str | None:
    """The pinned tool that runs this Deployment's (first) container, if there is one."""
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    return IMAGE_TOOLS.get(image.rsplit(":", 1)[0])


def mounted_config(deployment: Obj, objects: list[Obj], folder: Path) -> dict[str, Path]:
    """Write each ConfigMap volume of the pod into `folder`; mount path -> local folder."""
    template = deployment["spec"]["template"]["spec"]
    namespace = deployment["metadata"]["namespace"]
    config_maps = {o["metadata"]["name"]: o for o in objects
                   if o["kind"] == "ConfigMap" and o["metadata"].get("namespace") == namespace}  # fmt: skip
    volumes = {v["name"]: v["configMap"]["name"] for v in template.get("volumes") or [] if "configMap" in v}
    mounts = {}
    for mount in template["containers"][0].get("volumeMounts") or []:
        if mount["name"] in volumes:
            local = folder / mount["name"]
            local.mkdir(parents=True, exist_ok=True)
            for key, text in (config_maps[volumes[mount["name"]]].get("data") or {}).items():
                (local / key).write_text(text, encoding="utf-8")
            mounts[mount["mountPath"]] = local
    return mounts


def host_process(deployment: Obj, objects: list[Obj], binary: Path, tool: str, kubeconfig: Path,
                 folder: Path) -> Daemon:  # fmt: skip
    """A Daemon (not started) running the Deployment's container with its rendered arguments."""
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    folder.mkdir(parents=True, exist_ok=True)
    mounts = mounted_config(deployment, objects, folder / "mounts")
    args = []
    for arg in container.get("args") or []:
        for mount_path, local in mounts.items():
            arg = arg.replace(mount_path.rstrip("/") + "/", f"{local}/")
        args.append(arg)
    host = HOST_ARGS[tool]
    ports = [free_port() for _ in range(host.ports)]
    return Daemon(deployment["metadata"]["name"], [str(binary), *args, host.kubeconfig(kubeconfig),
                                                   *host.listeners(ports)],
                  folder / f"{deployment['metadata']['name']}.log", ports=ports)  # fmt: skip
