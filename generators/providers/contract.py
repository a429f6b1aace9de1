"""What every virtual-kubelet provider module states about the program it runs.

Each provider type is a different program (own flags, own config file format, own node
taint, own way of advertising capacity), so one module per type owns that knowledge, cited
against the provider's source, and the overflow generator only asks it. Paths inside the
container are shared: the ConfigMap at CONFIG_DIR, the provider's credentials Secret at
CREDENTIALS_DIR (files, never environment variables: an env var leaks into
`kubectl describe`, crash dumps and child processes), and, for a program that needs one, a
kubelet serving certificate at SERVING_DIR: the API server calls the node's kubelet API
over TLS for `kubectl logs`, `exec`, `attach` and `port-forward` on spilled pods (and
metrics-server for their stats); without it those fail while pods still run.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

# Siblings, never nested: a mount point inside a read-only ConfigMap volume is fragile.
CONFIG_DIR = "/etc/virtual-kubelet/config"
CREDENTIALS_DIR = "/etc/virtual-kubelet/credentials"
SERVING_DIR = "/etc/virtual-kubelet/serving"  # kubernetes.io/tls Secret vk-<p>-serving-cert
KUBELET_PORT = 10250


@dataclass(frozen=True)
class NodeTaint:
    """The NoSchedule taint the provider's node registers with (inference tolerates it)."""

    key: str
    value: str
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class ProviderInput:
    """What a contract needs from the environment's provider entry (no model import: the
    model derives tolerations from the contracts, so the contracts must not import it)."""

    name: str
    node_name: str
    gpus: int
    gpu_resource: str
    config: Mapping[str, Any]  # the environment's free-form `config`, as written
    credentials_key: str  # file name of the credential inside CREDENTIALS_DIR

    @property
    def credentials_file(self) -> str:
        return f"{CREDENTIALS_DIR}/{self.credentials_key}"


@dataclass(frozen=True)
class Launch:
    """How the container is started: flags, plain env (never a secret), one config file."""

    args: tuple[str, ...]
    env: tuple[Mapping[str, Any], ...]
    config_file: str  # name under CONFIG_DIR
    config_text: str


def pod_ip(name: str) -> Mapping[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}


def value(name: str, text: str) -> Mapping[str, Any]:
    return {"name": name, "value": text}


def serving_env() -> tuple[Mapping[str, Any], ...]:
    """node-cli's kubelet API TLS files (APISERVER_CERT_LOCATION/APISERVER_KEY_LOCATION)."""
    return (value("APISERVER_CERT_LOCATION", f"{SERVING_DIR}/tls.crt"),
            value("APISERVER_KEY_LOCATION", f"{SERVING_DIR}/tls.key"))  # fmt: skip


class Contract(ABC):
    """One provider type. Class attributes are facts about the program, cited in the
    module docstring of each implementation."""

    type: ClassVar[str]  # the environment's `type:`
    taint_key: ClassVar[str]
    # A kubelet serving certificate must be mounted for `kubectl logs/exec` on spilled pods
    # (the API server calls the node's kubelet API over TLS); False when the program makes
    # its own (interLink signs one itself).
    needs_serving_certificate: ClassVar[bool]
    metrics_port: ClassVar[int | None]  # a separate metrics port, if the program has one
    flags: ClassVar[frozenset[str]]  # every flag the program parses (tests check ours)
    config_keys: ClassVar[frozenset[str]]  # keys its config file format has

    @abstractmethod
    def taint(self, p: ProviderInput) -> NodeTaint: ...

    @abstractmethod
    def advertised_gpus(self, p: ProviderInput) -> int:
        """What the node's capacity will say for p.gpu_resource once registered."""

    @abstractmethod
    def launch(self, p: ProviderInput) -> Launch: ...

    def reserved_config_keys(self) -> frozenset[str]:
        """Keys the contract writes itself (capacity, credential paths): not for the file."""
        return frozenset()


def json_text(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
