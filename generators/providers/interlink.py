"""interLink's own virtual kubelet (not node-cli): a separate program with its own flags.

Source: github.com/interTwin-eu/interLink (commit 2a34c467 for cmd/ and virtualkubelet.go,
3c35b046 for config.go):
- cmd/virtual-kubelet/main.go: parses only --nodename and --configpath (Go `flag`), reads
  KUBELET_PORT (required, parsed as an integer) and POD_IP from the environment, serves the
  kubelet API on :10250 with a certificate it signs itself
  (NewSelfSignedCertificateRetriever), so no serving certificate is mounted. Its Secret,
  ConfigMap and Service informers are cluster-wide (no namespace option).
- pkg/virtualkubelet/virtualkubelet.go LoadConfig: the config file is YAML; the node is
  registered with the taint virtual-node.interlink/no-schedule=true:NoSchedule (hard-coded)
  and capacity cpu/memory/pods/nvidia.com/gpu from the config keys CPU, Memory, Pods and
  nvidia.com/gpu (DefaultGPUCapacity "0": without the key it advertises no GPU).
  statusLoop reads VKTokenFile (the bearer token for the interLink API) from disk and exits
  if it cannot.
- pkg/virtualkubelet/config.go: keys InterlinkURL, InterlinkPort, KubernetesApiAddr,
  KubernetesApiPort, KubernetesApiCaCrt, VKConfigPath, VKTokenFile, ServiceAccount,
  Namespace, PodIP, VerboseLogging, ErrorsOnlyLogging, HTTP, KubeletHTTP, CPU, Memory, Pods,
  nvidia.com/gpu.
"""

from __future__ import annotations

from typing import ClassVar

import yaml

from generators.providers.contract import (
    CONFIG_DIR,
    KUBELET_PORT,
    Contract,
    Launch,
    NodeTaint,
    ProviderInput,
    pod_ip,
    value,
)

GPU_KEY = "nvidia.com/gpu"  # the YAML key interLink reads; it always advertises nvidia.com/gpu
TOKEN_KEY = "VKTokenFile"


class InterLink(Contract):
    type = "interlink"
    taint_key = "virtual-node.interlink/no-schedule"
    needs_serving_certificate = False
    metrics_port: ClassVar[int | None] = None
    flags = frozenset({"--nodename", "--configpath"})
    config_keys = frozenset({"InterlinkURL", "InterlinkPort", "KubernetesApiAddr", "KubernetesApiPort",
                             "KubernetesApiCaCrt", "VKConfigPath", TOKEN_KEY, "ServiceAccount", "Namespace",
                             "PodIP", "VerboseLogging", "ErrorsOnlyLogging", "HTTP", "KubeletHTTP", "CPU",
                             "Memory", "Pods", GPU_KEY})  # fmt: skip

    def taint(self, p: ProviderInput) -> NodeTaint:
        return NodeTaint(self.taint_key, "true")

    def reserved_config_keys(self) -> frozenset[str]:
        return frozenset({GPU_KEY, TOKEN_KEY})

    def advertised_gpus(self, p: ProviderInput) -> int:
        return p.gpus

    def launch(self, p: ProviderInput) -> Launch:
        config = {**dict(p.config), TOKEN_KEY: p.credentials_file, GPU_KEY: str(p.gpus)}
        text = yaml.safe_dump(config, sort_keys=True, default_flow_style=False)
        env = (value("KUBELET_PORT", str(KUBELET_PORT)), pod_ip("POD_IP"))
        args = (f"--nodename={p.node_name}", f"--configpath={CONFIG_DIR}/InterLinkConfig.yaml")
        return Launch(args, env, "InterLinkConfig.yaml", text)
