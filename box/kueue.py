"""The pinned Kueue controller, out of cluster, against the test apiserver.

Its configuration is the RENDERED one (so Kueue itself loads and validates what we ship):
by default the Kueue Helm chart's values fragment rendered/<env>/installers/kueue-values.yaml
(`managerConfig.controllerManagerConfigYaml`, which the chart copies into its
kueue-manager-config ConfigMap, adding only internalCertManagement when it is absent: kueue
v0.19.2 charts/kueue/templates/manager/manager-config.yaml), or with
`kueue.configurationDelivery: configMap` the rendered kueue-manager-config ConfigMap. Only
what differs outside a cluster is overridden: no leader
election, no internal cert management (that would try to inject CA bundles into webhook
configurations and conversion webhooks that do not exist here), loopback listeners on free
ports, and batch/job as the only framework (the JobSet and Trainer CRDs are not installed).
The tests install no webhook configuration, so the apiserver never calls Kueue's webhooks
there; the cluster in a box installs the chart's, pointed at this process
(box/kueue_chart.py).

Two wrinkles, both hard-coded paths in Kueue v0.19.2. The on-demand visibility API server
(pending-workload listings, not admission) wants /visibility/tls.crt: it is switched off
with --feature-gates=VisibilityOnDemand=false. And with internal cert management off, Kueue
reads its metrics serving certificate from /etc/kueue/metrics/certs (cmd/kueue/main.go) and
exits if it is missing. The process therefore runs in a private mount namespace (`unshare`) where
/etc is an overlay with that directory added; the host's /etc is never written.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from box import pki, readyz
from box.daemon import Daemon, free_port
from generators.components import kueue as kueue_component
from generators.layout import INSTALLERS
from generators.pipeline.render import RenderedFile

KUEUE_READY_SECONDS = 120
METRICS_CERT_DIR = "/etc/kueue/metrics/certs"  # hard-coded in kueue v0.19.2 cmd/kueue/main.go


def rendered_configuration(files: Sequence[RenderedFile]) -> dict[str, Any]:
    """The Configuration as rendered, from the file text `generate.py render` writes: the
    chart values' controllerManagerConfigYaml, or the kueue-manager-config ConfigMap's key.
    Exactly one of the two must be rendered (two would be two owners again)."""
    texts = []
    for rendered in files:
        document = yaml.safe_load(rendered.text)
        if rendered.path == f"{INSTALLERS}/{kueue_component.HELM_VALUES}":
            texts.append(document["managerConfig"]["controllerManagerConfigYaml"])
        elif (
            rendered.is_object
            and document["kind"] == "ConfigMap"
            and document["metadata"]["name"] == kueue_component.CONFIG_MAP_NAME
        ):
            texts.append(document["data"][kueue_component.CONFIG_KEY])
    assert len(texts) == 1, f"{len(texts)} rendered Kueue configurations, expected exactly one"
    configuration: dict[str, Any] = yaml.safe_load(texts[0])
    assert configuration["kind"] == "Configuration", configuration
    return configuration


def out_of_cluster(
    configuration: dict[str, Any],
    ports: dict[str, int],
    cert_dir: Path,
    frameworks: Sequence[str] = ("batch/job",),
) -> dict[str, Any]:
    """`configuration` with the out-of-cluster overrides (see the module docstring);
    `frameworks`: the integrations whose CRDs and controllers are there (the box adds JobSet)."""
    changed = dict(configuration)
    changed["leaderElection"] = {"leaderElect": False}
    changed["internalCertManagement"] = {"enable": False}
    changed["health"] = {"healthProbeBindAddress": f"127.0.0.1:{ports['health']}"}
    changed["metrics"] = {**configuration.get("metrics", {}), "bindAddress": f"127.0.0.1:{ports['metrics']}"}
    changed["webhook"] = {"port": ports["webhook"], "host": "127.0.0.1", "certDir": str(cert_dir)}
    changed["integrations"] = {**configuration.get("integrations", {}), "frameworks": list(frameworks)}
    return changed


def _serving_certs(folder: Path) -> Path:
    """tls.crt/tls.key (and the ca.crt that signed them) for Kueue's webhook and metrics
    listeners; kept when already there, so a caller can hand the CA out before the start."""
    if (folder / "tls.crt").is_file() and (folder / "ca.crt").is_file():
        return folder
    certs = pki.generate(folder)
    (folder / "tls.crt").write_bytes(certs.serving_cert.read_bytes())
    (folder / "tls.key").write_bytes(certs.serving_key.read_bytes())
    return folder


def _private_etc_script(cert_dir: Path, scratch: Path, argv: list[str]) -> str:
    """Shell run inside `unshare --mount`: overlay /etc, add the metrics certs, exec Kueue."""
    upper, work = scratch / "upper", scratch / "work"
    steps = [
        f"mount -t tmpfs trainyard-kueue {shlex.quote(str(scratch))}",
        f"mkdir -p {shlex.quote(str(upper))} {shlex.quote(str(work))}",
        f"mount -t overlay trainyard-kueue-etc -o lowerdir=/etc,upperdir={upper},workdir={work} /etc",
        f"mkdir -p {METRICS_CERT_DIR}",
        f"cp {shlex.quote(str(cert_dir))}/tls.crt {shlex.quote(str(cert_dir))}/tls.key {METRICS_CERT_DIR}/",
        "exec " + " ".join(shlex.quote(arg) for arg in argv),
    ]
    return " && ".join(steps)


def serving_ca(workdir: Path) -> Path:
    """The CA that signs the webhook serving certificate of the Kueue started in `workdir`
    (for a webhook configuration's caBundle); created now if it is not there yet."""
    return _serving_certs(workdir / "certs") / "ca.crt"


def start_kueue(
    binary: Path,
    kubeconfig: Path,
    configuration: dict[str, Any],
    workdir: Path,
    ports: dict[str, int] | None = None,
    frameworks: Sequence[str] = ("batch/job",),
) -> Daemon:
    """Start Kueue with `configuration` (out_of_cluster applied here) and wait for /readyz.

    `ports`: health, metrics and webhook listener ports (default: free ones)."""
    workdir.mkdir(parents=True, exist_ok=True)
    ports = ports or {name: free_port() for name in ("health", "metrics", "webhook")}
    cert_dir = _serving_certs(workdir / "certs")
    config_path = workdir / "kueue-config.yaml"
    config_path.write_text(
        yaml.safe_dump(out_of_cluster(configuration, ports, cert_dir, frameworks)), encoding="utf-8"
    )
    scratch = workdir / "private-etc"
    scratch.mkdir(exist_ok=True)
    argv = [
        str(binary),
        f"--config={config_path}",
        f"--kubeconfig={kubeconfig}",
        # The on-demand visibility API server reads its certificate from the hard-coded
        # /visibility/tls.crt; it only serves pending-workload listings, not admission.
        "--feature-gates=VisibilityOnDemand=false",
        "--zap-log-level=2",
    ]
    script = _private_etc_script(cert_dir, scratch, argv)
    daemon = Daemon(
        "kueue",
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        workdir / "kueue.log",
        ports=tuple(ports.values()),
        cwd=workdir,
    )
    return readyz.start(daemon, ports["health"], KUEUE_READY_SECONDS)
