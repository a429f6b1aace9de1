"""tests/monitoring/servicemonitor.py against prometheus-operator's own expected output.

The oracle is the operator's golden file, not this repository's reading of it:
prometheus-operator v0.93.0 (commit f8fafd475f3d132e239432ae6172de60a6cb6516)
`pkg/prometheus/promcfg_test.go` `TestGenerateRelabelConfig` (line 6455) renders the
ServiceMonitor below and compares with `pkg/prometheus/testdata/GenerateRelabelConfig.golden`,
whose `scrape_configs[0]` is EXPECTED, copied verbatim.
"""

from __future__ import annotations

import pytest
import yaml

from tests.monitoring import servicemonitor

# TestGenerateRelabelConfig's ServiceMonitor, as the CRD's YAML (Go field -> JSON name).
MONITOR = yaml.safe_load("""
metadata: {name: test, namespace: default}
spec:
  selector: {matchLabels: {foo: bar}}
  endpoints:
  - port: https-metrics
    interval: 30s
    metricRelabelings:
    - {action: Drop, regex: container_fs*, sourceLabels: [__name__]}
    - {action: Replace, replacement: "", targetLabel: job}
    relabelings:
    - {action: Uppercase, sourceLabels: [instance], targetLabel: instance}
    - {action: Replace, regex: "(.+)(?::d+)", replacement: "$1:9537", sourceLabels: [__address__],
       targetLabel: __address__}
    - {action: Replace, replacement: crio, targetLabel: job}
    - {action: Replace, replacement: "", targetLabel: job}
""")

EXPECTED = yaml.safe_load("""
- job_name: serviceMonitor/default/test/0
  honor_labels: false
  kubernetes_sd_configs:
  - role: endpoints
    namespaces:
      names:
      - default
  scrape_interval: 30s
  relabel_configs:
  - source_labels:
    - job
    target_label: __tmp_prometheus_job_name
  - action: keep
    source_labels:
    - __meta_kubernetes_service_label_foo
    - __meta_kubernetes_service_labelpresent_foo
    regex: (bar);true
  - action: keep
    source_labels:
    - __meta_kubernetes_endpoint_port_name
    regex: https-metrics
  - source_labels:
    - __meta_kubernetes_endpoint_address_target_kind
    - __meta_kubernetes_endpoint_address_target_name
    separator: ;
    regex: Node;(.*)
    replacement: ${1}
    target_label: node
  - source_labels:
    - __meta_kubernetes_endpoint_address_target_kind
    - __meta_kubernetes_endpoint_address_target_name
    separator: ;
    regex: Pod;(.*)
    replacement: ${1}
    target_label: pod
  - source_labels:
    - __meta_kubernetes_namespace
    target_label: namespace
  - source_labels:
    - __meta_kubernetes_service_name
    target_label: service
  - source_labels:
    - __meta_kubernetes_pod_name
    target_label: pod
  - source_labels:
    - __meta_kubernetes_pod_container_name
    target_label: container
  - action: drop
    source_labels:
    - __meta_kubernetes_pod_phase
    regex: (Failed|Succeeded)
  - source_labels:
    - __meta_kubernetes_service_name
    target_label: job
    replacement: ${1}
  - target_label: endpoint
    replacement: https-metrics
  - source_labels:
    - instance
    target_label: instance
    action: uppercase
  - source_labels:
    - __address__
    target_label: __address__
    regex: (.+)(?::d+)
    replacement: $1:9537
    action: replace
  - target_label: job
    replacement: crio
    action: replace
  - target_label: job
    replacement: ""
    action: replace
  - source_labels:
    - __address__
    - __tmp_hash
    target_label: __tmp_hash
    regex: (.+);
    replacement: $1
    action: replace
  - source_labels:
    - __tmp_hash
    target_label: __tmp_hash
    modulus: 1
    action: hashmod
  - source_labels:
    - __tmp_hash
    - __tmp_disable_sharding
    regex: $(SHARD);|.+;.+
    action: keep
  metric_relabel_configs:
  - source_labels:
    - __name__
    regex: container_fs*
    action: drop
  - target_label: job
    replacement: ""
    action: replace
""")


def test_translation_is_the_operators_golden_output() -> None:
    assert [servicemonitor.scrape_config(MONITOR, 0, shard=None)] == EXPECTED


def test_the_only_shard_is_substituted() -> None:
    rules = servicemonitor.scrape_config(MONITOR, 0)["relabel_configs"]
    assert rules[-1] == {
        "source_labels": ["__tmp_hash", "__tmp_disable_sharding"],
        "regex": "0;|.+;.+",
        "action": "keep",
    }


@pytest.mark.parametrize(
    ("where", "field"),
    [
        ("spec", {"targetLabels": ["team"]}),
        ("endpoint", {"tlsConfig": {"insecureSkipVerify": True}}),
        ("endpoint", {"bearerTokenFile": "/token"}),
    ],
)
def test_fields_it_does_not_translate_are_refused(where: str, field: dict[str, object]) -> None:
    """A chart that starts using one must fail here, not be scraped differently than in a cluster."""
    monitor = yaml.safe_load(yaml.safe_dump(MONITOR))
    (monitor["spec"] if where == "spec" else monitor["spec"]["endpoints"][0]).update(field)
    with pytest.raises(servicemonitor.Unsupported, match=next(iter(field))):
        servicemonitor.scrape_config(monitor, 0)
