"""etcd + kube-apiserver on loopback, as controller-runtime's envtest runs them.

No kubelet, scheduler or controller-manager: objects are stored, validated (OpenAPI, CEL,
admission policies) and served, but nothing acts on them unless a test runs a controller
(Kueue, the descheduler, the gate) against the server. Binaries are the pinned builds from
tools/install.py; a missing one raises ToolNotInstalled.
"""

from __future__ import annotations

import shutil
import ssl
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from box import pki
from box.daemon import Daemon, free_port
from tools.toolchain import tool_path

ETCD_READY_SECONDS = 60
APISERVER_READY_SECONDS = 180  # a cold start on 2 busy cores installs ~100 built-in types


@dataclass
class ControlPlane:
    """A running etcd + kube-apiserver; `kubeconfig` is the admin's kubeconfig file."""

    workdir: Path
    etcd: Daemon | None = None
    apiserver: Daemon | None = None
    url: str = ""
    kubeconfig: Path = field(default_factory=Path)
    certs: pki.Pki | None = None
    startup_seconds: float = 0.0

    def start(self) -> None:
        """Start both processes and wait until /readyz answers ok; stop on any failure."""
        etcd_binary, apiserver_binary = tool_path("etcd"), tool_path("kube-apiserver")
        began = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.certs = pki.generate(self.workdir / "pki")
        try:
            etcd_url = self._start_etcd(etcd_binary)
            self._start_apiserver(apiserver_binary, etcd_url)
        except BaseException:
            self.stop()
            raise
        self.kubeconfig = self._write_kubeconfig()
        self.startup_seconds = time.monotonic() - began

    def _start_etcd(self, binary: Path) -> str:
        client_port, peer_port = free_port(), free_port()
        client_url = f"http://127.0.0.1:{client_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        self.etcd = Daemon(
            "etcd",
            [
                str(binary),
                f"--data-dir={self.workdir / 'etcd-data'}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=default={peer_url}",
                "--unsafe-no-fsync",  # test data: durability costs seconds per apply on slow disks
                "--log-level=warn",
            ],
            self.workdir / "etcd.log",
            ports=(client_port, peer_port),
        )
        self.etcd.start()
        self.etcd.wait_until(lambda: _http_ok(f"{client_url}/health"), ETCD_READY_SECONDS, "/health ok")
        return client_url

    def _start_apiserver(self, binary: Path, etcd_url: str) -> None:
        assert self.certs is not None
        certs = self.certs
        port = free_port()
        self.url = f"https://127.0.0.1:{port}"
        self.apiserver = Daemon(
            "kube-apiserver",
            [
                str(binary),
                f"--etcd-servers={etcd_url}",
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
                f"--tls-cert-file={certs.serving_cert}",
                f"--tls-private-key-file={certs.serving_key}",
                f"--client-ca-file={certs.ca_cert}",
                f"--secure-port={port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--allow-privileged=true",
                # No controller-manager mints tokens, so the admission plugin that insists on
                # a ServiceAccount's token would refuse every pod.
                "--disable-admission-plugins=ServiceAccount",
                "--authorization-mode=RBAC",
                f"--service-account-issuer={self.url}",
                f"--service-account-key-file={certs.sa_public_key}",
                f"--service-account-signing-key-file={certs.sa_private_key}",
                "--endpoint-reconciler-type=none",  # no kubernetes Service endpoints to keep
                "--v=1",
            ],
            self.workdir / "kube-apiserver.log",
            ports=(port,),
        )
        self.apiserver.start()
        context = ssl.create_default_context(cafile=str(certs.ca_cert))
        context.load_cert_chain(str(certs.admin_cert), str(certs.admin_key))
        self.apiserver.wait_until(
            lambda: _http_ok(f"{self.url}/readyz", context), APISERVER_READY_SECONDS, "/readyz ok"
        )

    def _write_kubeconfig(self) -> Path:
        assert self.certs is not None
        path = self.workdir / "kubeconfig"
        # File references, not inline data: the Python client would otherwise write the
        # keys to fresh temp files for every client it builds.
        path.write_text(
            "apiVersion: v1\n"
            "kind: Config\n"
            "clusters:\n"
            "- name: test\n"
            "  cluster:\n"
            f"    server: {self.url}\n"
            f"    certificate-authority: {self.certs.ca_cert}\n"
            "users:\n"
            "- name: admin\n"
            "  user:\n"
            f"    client-certificate: {self.certs.admin_cert}\n"
            f"    client-key: {self.certs.admin_key}\n"
            "contexts:\n"
            "- name: test\n"
            "  context: {cluster: test, user: admin}\n"
            "current-context: test\n",
            encoding="utf-8",
        )
        return path

    def stop(self) -> None:
        """Apiserver first (it holds etcd watches), then etcd; verifies both are gone."""
        for daemon in (self.apiserver, self.etcd):
            if daemon is not None:
                daemon.stop()

    def remove(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


def _http_ok(url: str, context: ssl.SSLContext | None = None) -> bool:
    with urllib.request.urlopen(url, timeout=2, context=context) as response:
        return bool(response.status == 200)
