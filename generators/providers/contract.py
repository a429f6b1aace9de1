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
from typing import Any, ClassVar, Literal

from generators.upstream.rbac import Rule, rule

# Siblings, never nested: a mount point inside a read-only ConfigMap volume is fragile.
CONFIG_DIR = "/etc/virtual-kubelet/config"
CREDENTIALS_DIR = "/etc/virtual-kubelet/credentials"
SERVING_DIR = "/etc/virtual-kubelet/serving"  # kubernetes.io/tls Secret vk-<p>-serving-cert
KUBELET_PORT = 10250


@dataclass(frozen=True)
class VirtualNodeTaint:
    """A taint a provider's virtual node registers with (NoSchedule: inference tolerates it).
    Not model.types.Taint: the contracts must not import the model (ProviderInput)."""

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
    gpu_model: str
    config: Mapping[str, Any]  # the environment's free-form `config`, as written
    credentials_key: str  # file name of the credential inside CREDENTIALS_DIR
    provider_label: str  # the label key gates and affinities select a provider's node by
    # Taints the program must register its node with besides its own (the closed overflow
    # gate below Kubernetes 1.36, where no admission policy can add it: upstream/kubernetes.py).
    born_with: tuple[VirtualNodeTaint, ...] = ()

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


@dataclass(frozen=True)
class ConfigProblem:
    """A provider entry the program would not run as meant: `path` is relative to the entry
    (("config", "InterLinkURL"), ("gpuResource",)), so the loader can point at line:col."""

    path: tuple[str | int, ...]
    message: str
    hint: str


def node_and_pod_controller_rules(node: str) -> list[Rule]:
    """What the virtual-kubelet library every provider here is built on needs cluster-wide
    (node/node.go: nodes Create :320, Get :572, Patch status :585; node/pod.go: pods
    UpdateStatus :188 :261, Delete :250 :411; the pod informer lists and watches pods with a
    spec.nodeName field selector; leases in kube-node-lease), scoped to its own node and lease
    where the API allows resourceNames (create, list and watch cannot be)."""
    return [
        rule([""], ["pods"], ["get", "list", "watch", "patch", "delete"]),
        rule([""], ["pods/status"], ["update", "patch"]),
        rule([""], ["nodes"], ["create", "list", "watch"]),
        rule([""], ["nodes"], ["get", "update", "patch"], [node]),
        rule([""], ["nodes/status"], ["update", "patch"], [node]),
        rule([""], ["events"], ["create", "patch"]),
        rule(["coordination.k8s.io"], ["leases"], ["create"]),
        rule(["coordination.k8s.io"], ["leases"], ["get", "update"], [node]),
    ]


# What a spilled pod references that the program reads where the pod runs:
# "cluster" = its informers list and watch Secrets/ConfigMaps/Services in every namespace
# (nothing narrower works: a namespaced grant leaves the cache empty and pods fail);
# "namespaces" = it GETs them in the pod's namespace, so a RoleBinding per inference
# namespace is enough.
PodInputScope = Literal["cluster", "namespaces"]


def pod_ip(name: str) -> Mapping[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}


def value(name: str, text: str) -> Mapping[str, Any]:
    return {"name": name, "value": text}


def serving_env() -> tuple[Mapping[str, Any], ...]:
    """node-cli's kubelet API TLS files (APISERVER_CERT_LOCATION/APISERVER_KEY_LOCATION)."""
    return (
        value("APISERVER_CERT_LOCATION", f"{SERVING_DIR}/tls.crt"),
        value("APISERVER_KEY_LOCATION", f"{SERVING_DIR}/tls.key"),
    )


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
    # Whether the config parser matches keys exactly (yaml.v2 does; BurntSushi/toml does not).
    case_sensitive_keys: ClassVar[bool]
    # Labels the program itself puts on its node, whatever the config says; one of them
    # (with the provider label) is what the gate selects the node by.
    virtual_node_labels: ClassVar[Mapping[str, str]]
    pod_input_scope: ClassVar[PodInputScope]
    # Whether the program registers its node with the provider label and extra taints of its
    # own configuration (ProviderInput.born_with): what overflow needs below Kubernetes 1.36.
    registers_labels_and_taints: ClassVar[bool] = False

    @abstractmethod
    def taint(self, p: ProviderInput) -> VirtualNodeTaint: ...

    @abstractmethod
    def advertised_gpus(self, p: ProviderInput) -> int:
        """What the node's capacity will say for p.gpu_resource once registered."""

    @abstractmethod
    def launch(self, p: ProviderInput) -> Launch: ...

    def reserved_config_keys(self) -> frozenset[str]:
        """Keys the contract writes itself (capacity, credential paths): not for the file."""
        return frozenset()

    def selector_labels(self, p: ProviderInput) -> dict[str, str]:
        """The labels the gate's nodeSelector matches: one the program sets itself (so a
        real node never matches) and the provider label (so one gate selects one provider)."""
        key, value = sorted(self.virtual_node_labels.items())[0]
        return {key: value, p.provider_label: p.name}

    def cluster_rules(self, p: ProviderInput) -> list[Rule]:
        """Its ClusterRole: the virtual-kubelet library's needs, plus the pod inputs when its
        informers are cluster-wide."""
        rules = node_and_pod_controller_rules(p.node_name)
        if self.pod_input_scope == "cluster":
            rules.append(rule([""], ["configmaps", "secrets", "services"], ["get", "list", "watch"]))
        return rules

    def pod_input_rules(self) -> list[Rule]:
        """Rules bound in each inference namespace (empty when cluster_rules covers them)."""
        return []

    def config_problems(self, config: Mapping[str, Any], p: ProviderInput) -> list[ConfigProblem]:
        """Keys of the environment's `config` the program does not read or the contract sets."""
        problems: list[ConfigProblem] = []
        known = {k if self.case_sensitive_keys else k.lower(): k for k in self.config_keys}
        for key in config:
            spelled = known.get(str(key) if self.case_sensitive_keys else str(key).lower())
            if key in self.reserved_config_keys() or spelled in self.reserved_config_keys():
                problems.append(
                    ConfigProblem(
                        ("config", key), f"{key!r} is set by the {self.type} contract", self.reserved_hint()
                    )
                )
            elif spelled is None:
                close = [k for k in self.config_keys if k.lower() == str(key).lower()]
                hint = (
                    f"keys are case-sensitive: did you mean {close[0]!r}? " if close else ""
                ) + f"its keys: {', '.join(sorted(self.config_keys))}"
                message = f"{self.type} reads no config key {key!r}"
                problems.append(ConfigProblem(("config", key), message, hint))
        return problems

    def reserved_hint(self) -> str:
        return "GPU capacity comes from `gpus`, credentials from credentialsSecret"


class NodeUtilContract(Contract):
    """A program built on virtual-kubelet's node library (node/nodeutil: node-cli's `mock` and
    azure-aci are): what that library decides, once, cited in each module's docstring. Its
    NewNode labels the node type=virtual-kubelet and starts one cluster-wide
    Secret/ConfigMap/Service informer factory (so pod inputs are read cluster-wide); it
    serves the kubelet API with the pair at APISERVER_CERT_LOCATION/APISERVER_KEY_LOCATION and
    exits without it; the node's taint comes from VKUBELET_TAINT_KEY/VALUE/EFFECT (key default
    virtual-kubelet.io/provider), its InternalIP from VKUBELET_POD_IP."""

    taint_key = "virtual-kubelet.io/provider"
    # One taint (getTaint, commands/root/node.go:25-60, appended at root.go:121-124) and the
    # library's fixed labels (controller.go NewNode): no extra label, no second taint.
    registers_labels_and_taints: ClassVar[bool] = False
    needs_serving_certificate = True
    virtual_node_labels: ClassVar[Mapping[str, str]] = {"type": "virtual-kubelet"}
    pod_input_scope: ClassVar[PodInputScope] = "cluster"

    def node_env(self, p: ProviderInput) -> tuple[Mapping[str, Any], ...]:
        """The library's environment: the node's IP, its taint, the serving pair."""
        taint = self.taint(p)
        return (
            pod_ip("VKUBELET_POD_IP"),
            value("VKUBELET_TAINT_KEY", taint.key),
            value("VKUBELET_TAINT_VALUE", taint.value),
            value("VKUBELET_TAINT_EFFECT", taint.effect),
            *serving_env(),
        )


def json_text(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
