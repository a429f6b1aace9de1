"""The TaintPolicy contract example (gate/README.md "Policy file"), with two gates (lambda,
then salad), as text the tests load, edit and feed to the controller."""

from __future__ import annotations

# The contract, as the overflow generator renders it into ConfigMap key policy.yaml.
EXAMPLE = """\
apiVersion: trainyard.dev/v1alpha1
kind: TaintPolicy
metadata:
  name: overflow-gate
spec:
  prometheus:
    url: http://prometheus-operated.monitoring.svc:9090
    timeoutSeconds: 5
  query: 'sum(kube_node_status_allocatable{resource="nvidia_com_gpu",node!~"vk-.*"}) - sum(kube_pod_container_resource_requests{resource="nvidia_com_gpu",node!~"vk-.*"})'
  reconcileIntervalSeconds: 30
  onPrometheusUnavailable: hold        # hold | close | open
  dryRun: false
  gates:                               # one per provider, preferred (cheapest) first
    - name: lambda                     # provider name
      nodeSelector:                    # label selector (matchLabels only)
        matchLabels: {type: virtual-kubelet, trainyard.dev/provider: lambda}
      taint: {key: trainyard.dev/overflow-gate, value: closed, effect: NoSchedule}
      closeWhenFreeGpusAtLeast: 64
      closeAfterSeconds: 600
      openWhenFreeGpusBelow: 16
      openAfterSeconds: 60
    - name: salad
      nodeSelector:
        matchLabels: {type: virtual-kubelet, trainyard.dev/provider: salad}
      taint: {key: trainyard.dev/overflow-gate, value: closed, effect: NoSchedule}
      closeWhenFreeGpusAtLeast: 64
      closeAfterSeconds: 600
      openWhenFreeGpusBelow: 8
      openAfterSeconds: 120
"""  # noqa: E501
