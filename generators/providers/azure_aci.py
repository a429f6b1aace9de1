"""virtual-kubelet/azure-aci: Azure Container Instances as a node.

Source: github.com/virtual-kubelet/azure-aci (tag v1.6.2 and main at 382bbaad agree here):
- cmd/virtual-kubelet/main.go: flags --nodename, --provider-config, --cluster-domain,
  --startup-timeout, --disable-taint, --os, --log-level, --pod-sync-workers,
  --full-resync-period, --client-verify-ca, --no-verify-clients, webhook auth flags
  (--provider, --namespace, --metrics-addr, --enable-node-lease are deprecated and hidden:
  "metrics are only available on the main api port"). Taint from VKUBELET_TAINT_KEY
  (default virtual-kubelet.io/provider), VKUBELET_TAINT_VALUE (default "azure"),
  VKUBELET_TAINT_EFFECT (default NoSchedule). Kubelet API TLS from
  APISERVER_CERT_LOCATION/APISERVER_KEY_LOCATION, loaded by nodeutil.WithKeyPairFromPath
  (:234): a pair that cannot be loaded fails NewNode and the program exits (the same code
  exits so in node-cli, run at v1.14.1): the serving Secret is required.
- pkg/auth/auth_config.go SetAuthConfig: credentials from the FILE named by
  AZURE_AUTH_LOCATION (an SDK auth JSON), else AKS_CREDENTIAL_LOCATION, else client
  id/secret variables. AZURE_AUTH_LOCATION_JSON is read nowhere.
- pkg/provider/config.go: the --provider-config file is TOML, providerConfig{ResourceGroup,
  Region, OperatingSystem, CPU, Memory, Pods, SubnetName, SubnetCIDR} (BurntSushi/toml
  matches keys case-insensitively; written here in the struct's spelling).
- pkg/provider/vk_node.go capacity(): nvidia.com/gpu is advertised only when p.gpu is set,
  and setupNodeCapacity's GPU detection (ACI_QUOTA_GPU) is commented out: the node
  advertises NO GPU, whatever `gpus` says. advertised_gpus() says so; an azure-aci node
  therefore never takes a GPU pod. Not refused at load time (prod ships such a provider and
  dropping it is the environment owner's decision): docs/overflow.md, Provider contracts.
- cmd/virtual-kubelet/main.go :213 nodeutil.NewNode of virtual-kubelet v1.11.0 (go.mod):
  node label type=virtual-kubelet and ONE cluster-wide Secret/ConfigMap/Service informer
  factory (node/nodeutil/controller.go); `--namespace` is hidden and deprecated: "cannot set
  namespace, all namespaces watched" (:319-321). Pod inputs are read cluster-wide.
- Kubelet API auth (:148-198): off unless --authentication-token-webhook (then TokenReview
  and SubjectAccessReview through the API server, and client certificates verified against
  --client-verify-ca / APISERVER_CA_CERT_LOCATION). Not rendered: docs/overflow.md, Network.
"""

from __future__ import annotations

import json
from typing import ClassVar

from generators.providers.contract import (
    CONFIG_DIR,
    Launch,
    NodeUtilContract,
    ProviderInput,
    VirtualNodeTaint,
    value,
)

TOML_KEYS = (
    "ResourceGroup",
    "Region",
    "OperatingSystem",
    "CPU",
    "Memory",
    "Pods",
    "SubnetName",
    "SubnetCIDR",
)


def toml_text(config: dict[str, str]) -> str:
    """Flat TOML of string values (a JSON string literal is a valid TOML basic string)."""
    return "".join(f"{key} = {json.dumps(config[key])}\n" for key in TOML_KEYS if key in config)


class AzureAci(NodeUtilContract):
    type = "azure-aci"
    metrics_port: ClassVar[int | None] = None
    flags = frozenset(
        {
            "--nodename",
            "--provider-config",
            "--cluster-domain",
            "--startup-timeout",
            "--disable-taint",
            "--os",
            "--log-level",
            "--pod-sync-workers",
            "--full-resync-period",
            "--client-verify-ca",
            "--no-verify-clients",
            "--authentication-token-webhook",
        }
    )
    config_keys = frozenset(TOML_KEYS)
    case_sensitive_keys = False  # BurntSushi/toml matches keys case-insensitively

    def taint(self, p: ProviderInput) -> VirtualNodeTaint:
        return VirtualNodeTaint(self.taint_key, "azure")

    def advertised_gpus(self, p: ProviderInput) -> int:
        return 0

    def canonical(self, p: ProviderInput) -> dict[str, str]:
        spelled = {key.lower(): key for key in TOML_KEYS}
        return {spelled.get(str(k).lower(), str(k)): str(v) for k, v in p.config.items()}

    def launch(self, p: ProviderInput) -> Launch:
        env = (value("AZURE_AUTH_LOCATION", p.credentials_file), *self.node_env(p))
        args = (f"--nodename={p.node_name}", f"--provider-config={CONFIG_DIR}/config.toml", "--os=Linux")
        return Launch(args, env, "config.toml", toml_text(self.canonical(p)))
