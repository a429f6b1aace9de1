"""interLink's own virtual kubelet (not node-cli): a separate program with its own flags.

Read at interLink 0.6.1, the image we render (github.com/interlink-hq/interLink tag 0.6.1,
commit b49984c0; archive and file:line facts in ../shared/src/interlink-0.6.1-NOTES.txt):
- cmd/virtual-kubelet/main.go: parses only --nodename and --configpath (:150-151, Go `flag`),
  reads KUBELET_PORT (:222, default 5820) and POD_IP (:480) from the environment. The
  kubelet API's certificate (:264-294): KubeletCertFile+KubeletKeyFile, else DisableCSR ->
  self-signed (:276-278), else a CertificateSigningRequest for kubernetes.io/kubelet-serving
  that nothing in a stock cluster approves (until then every TLS handshake fails:
  pkg/virtualkubelet/cert-retriever.go:340-347). The server has no client authentication
  at all (:297-307, api.AttachPodRoutes without an auth wrapper :575).
  Secret and ConfigMap informers are cluster-wide (:434-437, :529-534): no namespace option.
- pkg/virtualkubelet/config.go:5-61: the YAML keys (gopkg.in/yaml.v2, non-strict and
  case-sensitive: an unknown or mis-cased key is silently ignored, virtualkubelet.go:551).
- pkg/virtualkubelet/virtualkubelet.go: node labels (:411-418, fixed, among them
  virtual-node.interlink/type=virtual-kubelet) plus NodeLabels entries "key=value"
  (:428-437); taint virtual-node.interlink/no-schedule=true:NoSchedule (:420-426);
  capacity = GetResources (:326-369): GPUs only from Resources.Accelerators[] whose
  ResourceType is exactly nvidia.com/gpu, amd.com/gpu or intel.com/gpu (:62-64, :330-336);
  an nvidia.com/gpu accelerator also labels the node nvidia-gpu-type=<Model> (:441-442).
  RetrievePodsFromCluster lists every Namespace (:2123) before the status loop starts
  (:1896-1907): without `list namespaces` spilled pods never leave "Remote pod submitted".
- pkg/virtualkubelet/execute.go: with SkipDownwardAPIResolution the provider resolves
  env secretKeyRef/configMapKeyRef itself with a GET in the pod's namespace (:980, :997,
  called at :1104-1111), and volumes always so (:856, :891); projected service-account
  tokens through TokenRequest (:751). isSafeURL (:35-48) refuses loopback and *.internal
  hosts for create/delete/status/logs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import urlsplit

import yaml

from generators.providers.contract import (
    CONFIG_DIR,
    KUBELET_PORT,
    ConfigProblem,
    Contract,
    Launch,
    PodInputScope,
    ProviderInput,
    VirtualNodeTaint,
    node_and_pod_controller_rules,
    pod_ip,
    value,
)
from generators.upstream.rbac import Rule, rule

TOKEN_KEY = "VKTokenFile"
RESOURCES_KEY = "Resources"
ACCELERATORS_KEY = "Accelerators"
# config.go:86-95: the Resources keys besides Accelerators (defaults CPU 100, Memory 3000G,
# Pods 10000: virtualkubelet.go:52-54)
RESOURCE_KEYS = frozenset({"CPU", "Memory", "Pods"})
# virtualkubelet.go:62-64: the only GPU types GetResources sums (case-sensitive)
GPU_TYPES = ("amd.com/gpu", "intel.com/gpu", "nvidia.com/gpu")
MODEL_LABELLED = "nvidia.com/gpu"  # virtualkubelet.go:441-442: label nvidia-gpu-type=<Model>
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")  # a Kubernetes label value
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")  # execute.go:43 (and *.internal)
# Decided by the contract, not by the environment (docs/overflow.md, "interLink"):
# DisableCSR: a self-signed kubelet certificate instead of a CSR nothing approves;
# SkipDownwardAPIResolution: pod inputs are read with namespaced GETs, so the Secrets the
# virtual-kubelet may read are those of the inference namespaces only;
# NodeLabels: the provider label the gate selects; the certificate keys would need a
# mounted key pair the contract does not render.
DECIDED = {"DisableCSR": True, "SkipDownwardAPIResolution": True}
# A key pair the contract would have to mount, or a CSR signer nothing approves for: the
# kubelet certificate is DisableCSR's self-signed one (docs/overflow.md).
CERTIFICATE_KEYS = ("KubeletCertFile", "KubeletKeyFile", "KubeletCSRSignerName")
CONFIG_KEYS = frozenset(
    {
        "InterlinkURL",
        "InterlinkPort",
        "KubernetesApiAddr",
        "KubernetesApiPort",
        "KubernetesApiCaCrt",
        "DisableProjectedVolumes",
        "JobScriptBuilderURL",
        "VKConfigPath",
        TOKEN_KEY,
        "ServiceAccount",
        "Namespace",
        "PodIP",
        "PodCIDR",
        "VerboseLogging",
        "ErrorsOnlyLogging",
        "HTTP",
        "KubeletHTTP",
        "KubeletCertFile",
        "KubeletKeyFile",
        "KubeletCSRSignerName",
        RESOURCES_KEY,
        "NodeLabels",
        "NodeTaints",
        "TLS",
        "Network",
        "SkipDownwardAPIResolution",
        "DisableCSR",
    }
)


def resources_problems(resources: Any) -> list[ConfigProblem]:
    """Resources: CPU, Memory, Pods may be set; Accelerators is the contract's (from `gpus`)."""
    if resources is None:
        return []
    keys = ", ".join(sorted(RESOURCE_KEYS))
    if not isinstance(resources, Mapping):
        return [ConfigProblem(("config", RESOURCES_KEY), "Resources must be a mapping", f"keys: {keys}")]
    problems = []
    for key in resources:
        path = ("config", RESOURCES_KEY, key)
        if key == ACCELERATORS_KEY:
            problems.append(
                ConfigProblem(
                    path,
                    "Resources.Accelerators is set by the interlink contract",
                    "GPU capacity comes from `gpus`, `gpuResource` and `gpuModel`",
                )
            )
        elif key not in RESOURCE_KEYS:
            problems.append(
                ConfigProblem(
                    path, f"interlink reads no Resources key {key!r}", f"its keys: {keys} (case-sensitive)"
                )
            )
    return problems


def url_problems(url: Any) -> list[ConfigProblem]:
    """An InterlinkURL every pod call would fail on (execute.go getSidecarEndpoint, isSafeURL)."""
    if not isinstance(url, str) or url.startswith("unix://"):
        return []
    parts = urlsplit(url)
    host = parts.hostname or ""
    path = ("config", "InterlinkURL")
    if parts.scheme not in ("http", "https"):
        return [
            ConfigProblem(
                path,
                f"InterlinkURL {url!r} is neither http(s):// nor unix://",
                "interLink exits on any other scheme (pkg/virtualkubelet/execute.go:274)",
            )
        ]
    if host in LOOPBACK_HOSTS or host.endswith(".internal"):
        return [
            ConfigProblem(
                path,
                f"interLink refuses pod calls to {host!r} as SSRF",
                "use the API's routable name or a unix:// socket (pkg/virtualkubelet/execute.go:35-48)",
            )
        ]
    return []


def resource_type_problems(p: ProviderInput) -> list[ConfigProblem]:
    problems = []
    if p.gpu_resource not in GPU_TYPES:
        problems.append(
            ConfigProblem(
                ("gpuResource",),
                f"interLink 0.6.1 advertises no {p.gpu_resource!r} capacity",
                f"it counts only {', '.join(GPU_TYPES)} (exact spelling; "
                "pkg/virtualkubelet/virtualkubelet.go:62-64)",
            )
        )
    elif p.gpu_resource == MODEL_LABELLED and (len(p.gpu_model) > 63 or not LABEL_VALUE.match(p.gpu_model)):
        problems.append(
            ConfigProblem(
                ("gpuModel",),
                f"gpuModel {p.gpu_model!r} is not a valid label value",
                "interLink labels the node nvidia-gpu-type=<gpuModel>, and the API server refuses the node "
                "otherwise: letters, digits, '-', '_', '.', at most 63, alphanumeric at both ends",
            )
        )
    return problems


class InterLink(Contract):
    type = "interlink"
    taint_key = "virtual-node.interlink/no-schedule"
    needs_serving_certificate = False
    metrics_port: ClassVar[int | None] = None
    flags = frozenset({"--nodename", "--configpath"})
    config_keys = CONFIG_KEYS
    case_sensitive_keys = True
    virtual_node_labels: ClassVar[Mapping[str, str]] = {"virtual-node.interlink/type": "virtual-kubelet"}
    pod_input_scope: ClassVar[PodInputScope] = "namespaces"
    # NodeLabels (virtualkubelet.go:428-437) and NodeTaints (:452-474, added after its own taint)
    registers_labels_and_taints: ClassVar[bool] = True

    def taint(self, p: ProviderInput) -> VirtualNodeTaint:
        return VirtualNodeTaint(self.taint_key, "true")

    def reserved_config_keys(self) -> frozenset[str]:
        return frozenset({TOKEN_KEY, "NodeLabels", *CERTIFICATE_KEYS, *DECIDED})

    def reserved_hint(self) -> str:
        return (
            "the contract writes it: GPUs from `gpus`, VKTokenFile from credentialsSecret, NodeLabels "
            "from the provider name, DisableCSR and SkipDownwardAPIResolution as decided in "
            "docs/overflow.md"
        )

    def advertised_gpus(self, p: ProviderInput) -> int:
        return p.gpus if p.gpu_resource in GPU_TYPES else 0

    def cluster_rules(self, p: ProviderInput) -> list[Rule]:
        # RetrievePodsFromCluster lists every namespace (virtualkubelet.go:2123).
        return [*node_and_pod_controller_rules(p.node_name), rule([""], ["namespaces"], ["list"])]

    def pod_input_rules(self) -> list[Rule]:
        # GETs in the pod's namespace only (execute.go:856, :891, :980, :997); TokenRequest for
        # projected service-account tokens (:751). No list/watch: its cluster-wide informers
        # cannot be served by a namespaced grant anyway, and nothing waits for them.
        return [
            rule([""], ["configmaps", "secrets"], ["get"]),
            rule([""], ["serviceaccounts/token"], ["create"]),
        ]

    def config_problems(self, config: Mapping[str, Any], p: ProviderInput) -> list[ConfigProblem]:
        problems = [
            ConfigProblem(
                ("config", key),
                f"{key!r} is not supported: the interlink contract serves "
                "the kubelet API with a self-signed certificate (DisableCSR: true)",
                "no key pair is mounted and no CSR would be approved (docs/overflow.md)",
            )
            for key in config
            if key in CERTIFICATE_KEYS
        ]
        rest = {key: value for key, value in config.items() if key not in CERTIFICATE_KEYS}
        problems += super().config_problems(rest, p)
        return [
            *problems,
            *resources_problems(config.get(RESOURCES_KEY)),
            *url_problems(config.get("InterlinkURL")),
            *resource_type_problems(p),
        ]

    def config(self, p: ProviderInput) -> dict[str, Any]:
        """The InterLinkConfig the program reads: the environment's keys plus the contract's."""
        resources = {
            **dict(p.config.get(RESOURCES_KEY) or {}),
            ACCELERATORS_KEY: [
                {"ResourceType": p.gpu_resource, "Model": p.gpu_model, "Available": str(p.gpus)}
            ],
        }
        return {
            **dict(p.config),
            TOKEN_KEY: p.credentials_file,
            RESOURCES_KEY: resources,
            "NodeLabels": [f"{p.provider_label}={p.name}"],
            **DECIDED,
            **self.node_taints(p),
        }

    def node_taints(self, p: ProviderInput) -> dict[str, Any]:
        """NodeTaints: the environment's, then the ones the node must be born with
        (config.go:109-116 TaintSpec {Key, Value, Effect})."""
        own = list(p.config.get("NodeTaints") or [])
        born = [{"Key": t.key, "Value": t.value, "Effect": t.effect} for t in p.born_with]
        return {"NodeTaints": own + born} if own or born else {}

    def launch(self, p: ProviderInput) -> Launch:
        text = yaml.safe_dump(self.config(p), sort_keys=True, default_flow_style=False)
        env = (value("KUBELET_PORT", str(KUBELET_PORT)), pod_ip("POD_IP"))
        args = (f"--nodename={p.node_name}", f"--configpath={CONFIG_DIR}/InterLinkConfig.yaml")
        return Launch(args, env, "InterLinkConfig.yaml", text)
