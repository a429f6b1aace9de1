"""JobSet v0.12.0's controller in the box (the version Kueue v0.19.2 builds against): its CRD,
its JobSet webhooks pointed at the process, and the process itself, out of cluster.

The CRD and the webhook configurations are read from the module tools/install.py built the
controller from (sigs.k8s.io/jobset@v0.12.0 in the Go module cache, `config/components/`),
each checked against the sha256 pinned here: a cache holding anything else is refused, not
applied. Only the JobSet webhooks are registered, not JobSet's pod webhooks (exclusive
placement and pod-index bookkeeping, which no scene uses): they would put every pod creation
of the box behind one more process. The JobSet webhooks are needed: the controller relies on
its defaulting webhook (pkg/webhooks/jobset_webhook.go Default) having filled the spec.

The process runs as the box's admin (the chart's RBAC is not applied), with internal cert
management off (it would look for a webhook Service and Secret) and its webhook served with a
certificate signed by the box's CA on a loopback port.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
from pathlib import Path
from typing import Any

import yaml

from box import memo, pki, readyz
from box.daemon import Daemon, free_port
from box.kube import Obj
from tools.toolchain import PINS

INTEGRATION = "jobset.x-k8s.io/jobset"
MODULE = f"sigs.k8s.io/jobset@{PINS['jobset']}"
CRD = "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"
WEBHOOKS = "config/components/webhook/manifests.yaml"
SHA256 = {
    CRD: "d022b87624512cf0b6741b31b24a2bea9945b5a838b50713af29332c878bb6fe",
    WEBHOOKS: "cf9b784bb633344149413d805226fa918f9488b6cb57c3ce2c8af725d8d1e6b7",
}
JOBSET_WEBHOOKS = ("mjobset.kb.io", "vjobset.kb.io")  # the pod webhooks are left out (docstring)
READY_SECONDS = 120


class JobSetSourceMissing(RuntimeError):
    """The JobSet module is not in the Go module cache, or holds other bytes than pinned."""


def _module_file(relative: str) -> bytes:
    cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout
    path = Path(cache.strip()) / MODULE / relative
    if not path.is_file():
        raise JobSetSourceMissing(f"{path} is missing; run: python tools/install.py --force jobset")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256[relative]:
        raise JobSetSourceMissing(f"{path} has sha256 {digest}, pinned {SHA256[relative]} (box/jobset.py)")
    return data


def crds() -> list[Obj]:
    """JobSet's CustomResourceDefinition as JobSet v0.12.0 ships it."""
    data = _module_file(CRD)

    def parse() -> list[Obj]:
        # libyaml's loader: the pure-Python one took 2 to 4 s of every `box up` on the busy
        # 2-core machine for this one file; parsed once per file bytes (box/memo.py).
        return [doc for doc in yaml.load_all(data, Loader=yaml.CSafeLoader) if doc]

    return list(memo.memo("jobset-crd", [CRD, data], parse))


def webhooks(base_url: str, ca_pem: bytes) -> list[Obj]:
    """JobSet's mutating and validating JobSet webhooks, called at `base_url`."""
    ca_bundle = base64.b64encode(ca_pem).decode()
    out = []
    for doc in yaml.load_all(_module_file(WEBHOOKS), Loader=yaml.CSafeLoader):
        if not doc:
            continue
        doc["metadata"]["name"] = f"jobset-{doc['metadata']['name']}"
        doc["webhooks"] = [w for w in doc["webhooks"] if w["name"] in JOBSET_WEBHOOKS]
        for webhook in doc["webhooks"]:
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {"url": f"{base_url}{path}", "caBundle": ca_bundle}
        out.append(doc)
    return out


def configuration(ports: dict[str, int], cert_dir: Path) -> dict[str, Any]:
    return {
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['health']}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"port": ports["webhook"], "host": "127.0.0.1", "certDir": str(cert_dir)},
    }


def serving_certs(workdir: Path) -> Path:
    """tls.crt/tls.key for the webhook and the ca.crt that signed them (kept once made)."""
    folder = workdir / "certs"
    if not (folder / "tls.crt").is_file():
        certs = pki.generate(folder)
        (folder / "tls.crt").write_bytes(certs.serving_cert.read_bytes())
        (folder / "tls.key").write_bytes(certs.serving_key.read_bytes())
    return folder


def start_jobset(binary: Path, kubeconfig: Path, workdir: Path) -> tuple[Daemon, str, bytes]:
    """Start the controller and wait for /readyz; (daemon, webhook base URL, CA PEM)."""
    workdir.mkdir(parents=True, exist_ok=True)
    ports = {name: free_port() for name in ("health", "webhook")}
    cert_dir = serving_certs(workdir)
    config = workdir / "jobset-config.yaml"
    config.write_text(yaml.safe_dump(configuration(ports, cert_dir)), encoding="utf-8")
    daemon = Daemon(
        "jobset",
        [str(binary), f"--config={config}", f"--kubeconfig={kubeconfig}", "--zap-log-level=2"],
        workdir / "jobset.log",
        ports=tuple(ports.values()),
        cwd=workdir,
    )
    readyz.start(daemon, ports["health"], READY_SECONDS)
    return daemon, f"https://127.0.0.1:{ports['webhook']}", (cert_dir / "ca.crt").read_bytes()
