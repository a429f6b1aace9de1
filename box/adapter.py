"""The rendered prometheus-adapter beside the box, registered with the real aggregator.

The adapter (generators/components/monitoring/adapter.py) runs as a host process like the
other rendered controllers (box/controllers.py): its container's rendered
arguments, its ConfigMap written to a folder, its emptyDir mounts pointed at local folders,
the pinned v0.12.0 build, authenticated as its ServiceAccount (so the rendered
auth-delegator and auth-reader bindings are what it may use), its Prometheus URL pointed at
the box's Prometheus, listening on a free loopback port.

How the kube-apiserver's aggregator reaches it (decision, docs/controlplane.md): the
rendered Service is replaced by an `ExternalName` Service of the same name whose name is
127.0.0.1, and the rendered APIService is registered as rendered but for `service.port`,
set to the adapter's port. With the default `--enable-aggregator-routing=false` the
aggregator resolves an ExternalName Service to https://<externalName>:<APIService port>
(k8s.io/apiserver v0.36.5 pkg/util/proxy/proxy.go:148-152, ResolveCluster), and the
availability check skips the endpoint lookup for anything but ClusterIP Services
(k8s.io/kube-aggregator v0.36.5 pkg/controllers/status/remote/remote_available_controller.go:220).
Rejected: a selector-less Service with an EndpointSlice and `--enable-aggregator-routing`:
an endpoint may not be a loopback address (k8s.io/kubernetes v1.36.5
pkg/apis/core/validation/validation.go:8434), so the adapter would have to listen on the
host's network address, on a machine other users share; and a ClusterIP Service: there is
no kube-proxy here to route it.

The aggregator authenticates to the adapter with kwokctl's front-proxy client certificate
(the admin certificate, `--proxy-client-cert-file`, signed by the cluster CA), which the
adapter accepts through the client CA it reads from kube-system's
extension-apiserver-authentication ConfigMap (the rendered auth-reader RoleBinding).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path

from box import accounts
from box.controllers import mounted_config
from box.daemon import Daemon, free_port
from box.kube import Kube, Obj, wait_true
from box.monitoring import SCRAPE_SECONDS
from box.speed import divided, seconds_of
from generators.components.monitoring import adapter as rendered_adapter
from tools.toolchain import tool_path

APIREGISTRATION = "apiregistration.k8s.io/v1"
LOOPBACK = "127.0.0.1"
READY_SECONDS = 120
AVAILABLE_SECONDS = 120


def deferred(obj: Obj) -> bool:
    """The objects `register` applies (wired to the host process) instead of `box up`'s
    apply of the rendered tree: the adapter's Service and its APIService."""
    if obj["kind"] == "APIService":
        return bool(obj["metadata"]["name"] == rendered_adapter.APISERVICE_NAME)
    labels = obj["metadata"].get("labels") or {}
    return bool(
        obj["kind"] == "Service"
        and obj["metadata"]["name"] == rendered_adapter.NAME
        and labels.get("trainyard.dev/component") == "monitoring"
    )


def deployment_of(objects: Iterable[Obj]) -> Obj | None:
    for obj in objects:
        if obj["kind"] == "Deployment" and obj["metadata"]["name"] == rendered_adapter.NAME:
            return obj
    return None


def relist_flags(speed: int) -> list[str]:
    """At `--speed X` the adapter's relist period is divided like the controllers' durations
    (box/speed.py): the rendered 1m becomes 60 / X seconds, never below the box Prometheus's
    scrape interval (a relist more often finds nothing new). Each relist still looks back the
    rendered interval (`--metrics-max-age`, which defaults to the relist period): looking back
    only 2 s would miss a series scraped every 5 s and drop the metric between two relists.
    At speed 1 nothing is added: the rendered arguments as they are. Why: the adapter serves
    an external metric only once a relist has listed its series, so a new series waits up to
    a whole period, a minute of wall time in every scene and replay that drives a load,
    which at `--speed 30` is half an hour of the scene's time with the HPA blind."""
    if speed == 1:
        return []
    period = int(seconds_of(rendered_adapter.RELIST_INTERVAL))
    return [
        f"--metrics-relist-interval={divided(period, speed, SCRAPE_SECONDS)}s",
        f"--metrics-max-age={period}s",
    ]


def host_process(
    deployment: Obj,
    objects: list[Obj],
    kubeconfig: Path,
    folder: Path,
    prometheus: dict[str, str],
    speed: int = 1,
) -> Daemon:
    """A Daemon (not started) running the adapter with its rendered arguments (and, at a
    `speed` above 1, `relist_flags`); `prometheus` maps the rendered in-cluster Prometheus
    address to the box's."""
    spec = deployment["spec"]["template"]["spec"]
    container = spec["containers"][0]
    folder.mkdir(parents=True, exist_ok=True)
    mounts = mounted_config(deployment, objects, folder / "mounts", {})
    empty = {v["name"] for v in spec.get("volumes") or [] if "emptyDir" in v}
    for mount in container.get("volumeMounts") or []:
        if mount["name"] in empty:  # scratch the pod would get fresh: a fresh local folder
            local = folder / "mounts" / mount["name"]
            local.mkdir(parents=True, exist_ok=True)
            mounts[mount["mountPath"]] = local
    args = [_local(arg, mounts, prometheus) for arg in container.get("args") or []]
    port = free_port()
    uses = ("lister", "authentication", "authorization")
    credentials = [f"--{use}-kubeconfig={kubeconfig}" for use in uses]
    # After the rendered arguments, so they win (pflag keeps the last value).
    listener = [f"--bind-address={LOOPBACK}", f"--secure-port={port}"]
    argv = [str(tool_path("prometheus-adapter")), *args, *relist_flags(speed), *credentials, *listener]
    log = folder / f"{rendered_adapter.NAME}.log"
    return Daemon(rendered_adapter.NAME, argv, log, ports=(port,), cwd=folder)


def _local(arg: str, mounts: dict[str, Path], addresses: dict[str, str]) -> str:
    """`--flag=value` with a value under a mount path moved under its local folder (the
    longest mount path wins, once), and an in-cluster address replaced."""
    flag, sep, value = arg.partition("=")
    for mount_path in sorted(mounts, key=len, reverse=True):
        root = mount_path.rstrip("/")
        if value == root or value.startswith(root + "/"):
            value = str(mounts[mount_path]) + value[len(root) :]
            break
    for address, replacement in addresses.items():
        value = value.replace(address, replacement)
    return flag + sep + value


def start(
    kube: Kube, admin_kubeconfig: Path, objects: list[Obj], folder: Path, prometheus_url: str, speed: int
) -> Daemon | None:
    """Start the rendered adapter as its ServiceAccount (None: the environment renders none),
    its relist sped up at `speed` (`relist_flags`)."""
    deployment = deployment_of(objects)
    if deployment is None:
        return None
    namespace = deployment["metadata"]["namespace"]
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    folder.mkdir(parents=True, exist_ok=True)
    token = accounts.token_kubeconfig(kube, admin_kubeconfig, namespace, account, folder / "kubeconfig")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    rendered_url = next(a.split("=", 1)[1] for a in container["args"] if a.startswith("--prometheus-url="))
    daemon = host_process(
        deployment, objects, token, folder, {rendered_url.rstrip("/"): prometheus_url.rstrip("/")}, speed
    )
    daemon.start()
    return daemon


def register(kube: Kube, objects: list[Obj], port: int) -> None:
    """The deferred Service (as ExternalName to the loopback) and the rendered APIService
    (its port the adapter's); up once the aggregator reports the APIService Available."""
    for obj in objects:
        if not deferred(obj):
            continue
        wired = copy.deepcopy(obj)
        if obj["kind"] == "Service":
            ports = [{"name": p["name"], "port": p["port"], "protocol": "TCP"} for p in obj["spec"]["ports"]]
            wired["spec"] = {"type": "ExternalName", "externalName": LOOPBACK, "ports": ports}
        else:
            wired["spec"]["service"]["port"] = port
        kube.apply(wired)
    for obj in objects:
        if obj["kind"] == "APIService" and deferred(obj):
            wait_true(
                kube, APIREGISTRATION, "APIService", obj["metadata"]["name"], "Available", AVAILABLE_SECONDS
            )
    kube.dynamic.resources.invalidate_cache()
