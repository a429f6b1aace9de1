"""The `mock` provider of virtual-kubelet's own node-cli: the rehearsal provider (staging).

Source: github.com/virtual-kubelet/virtual-kubelet v1.13.0 (commit 7b1385bc):
- cmd/virtual-kubelet/internal/commands/root/flag.go: --nodename, --provider,
  --provider-config, --os, --metrics-addr, --namespace, --taint, --disable-taint, ...
- cmd/virtual-kubelet/internal/provider/mock/mock.go loadConfig: the config file is JSON, a
  map from NODE NAME to MockConfig{cpu, memory, pods, others, providerID}; `others` holds
  extra resources, so nvidia.com/gpu advertised = others[<gpuResource>].
- commands/root/node.go getTaint: key VKUBELET_TAINT_KEY (default
  virtual-kubelet.io/provider), value VKUBELET_TAINT_VALUE (default: the --provider value),
  effect VKUBELET_TAINT_EFFECT (default NoSchedule).
- commands/root/http.go + root.go:139-141: the kubelet API (logs, exec) is served with TLS
  from APISERVER_CERT_LOCATION/APISERVER_KEY_LOCATION (node/nodeutil/tls.go:43-51
  tls.LoadX509KeyPair); if the pair cannot be loaded (unset or missing files) the program
  exits: "open : no such file or directory" (run, v1.14.1). The serving Secret is required.
- KUBELET_PORT sets the listen port; VKUBELET_POD_IP the node's InternalIP.
- node/nodeutil/controller.go (v1.13.0 and v1.14.1 alike): the node is labelled
  type=virtual-kubelet (NewNode, v1.14.1 :316); the Secret/ConfigMap/Service informers are
  one cluster-wide factory (v1.14.1 :356-364; node-cli's --namespace only names the log
  field, root.go :157), and the pod controller resolves env and envFrom from their caches
  (node/pod.go createOrUpdatePod -> internal/podutils/env.go). A namespaced grant leaves the
  caches empty: a pod with a secretKeyRef fails "secret not found". So its pod inputs are
  read cluster-wide (the narrowest grant that works).
- encoding/json matches the config's field names case-insensitively.
"""

from __future__ import annotations

from typing import ClassVar

from generators.providers.contract import (
    CONFIG_DIR,
    KUBELET_PORT,
    Launch,
    NodeUtilContract,
    ProviderInput,
    VirtualNodeTaint,
    json_text,
    value,
)

METRICS_PORT = 10255
# cmd/virtual-kubelet/internal/provider/types.go:5 OperatingSystemLinux = "linux"; root.go:59
# refuses anything not in ValidOperatingSystems ("Linux" exits: operating system "Linux" is
# not supported; checked by running v1.14.1).
OPERATING_SYSTEM = "linux"


class Mock(NodeUtilContract):
    type = "mock"
    metrics_port: ClassVar[int | None] = METRICS_PORT
    flags = frozenset(
        {
            "--nodename",
            "--provider",
            "--provider-config",
            "--os",
            "--metrics-addr",
            "--namespace",
            "--taint",
            "--disable-taint",
            "--kubeconfig",
            "--cluster-domain",
            "--pod-sync-workers",
            "--enable-node-lease",
            "--startup-timeout",
            "--full-resync-period",
            "--log-level",
        }
    )
    config_keys = frozenset({"cpu", "memory", "pods", "others", "providerID"})
    case_sensitive_keys = False

    def taint(self, p: ProviderInput) -> VirtualNodeTaint:
        return VirtualNodeTaint(self.taint_key, self.type)

    def reserved_config_keys(self) -> frozenset[str]:
        return frozenset()  # others[gpuResource] is overwritten from `gpus`

    def advertised_gpus(self, p: ProviderInput) -> int:
        return p.gpus

    def launch(self, p: ProviderInput) -> Launch:
        others = {**dict(p.config.get("others", {})), p.gpu_resource: str(p.gpus)}
        config = {p.node_name: {**dict(p.config), "others": others}}
        env = (value("KUBELET_PORT", str(KUBELET_PORT)), *self.node_env(p))
        args = (
            f"--nodename={p.node_name}",
            f"--provider={self.type}",
            f"--provider-config={CONFIG_DIR}/config.json",
            f"--os={OPERATING_SYSTEM}",
            f"--metrics-addr=:{METRICS_PORT}",
        )
        return Launch(args, env, "config.json", json_text(config))
