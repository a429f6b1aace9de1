"""The small spec of the quota oracles: its pools, teams and shares, with the numbers they
give worked out by hand in tests/oracles/test_kueue_quotas.py's docstring. The policies
oracle (tests/oracles/test_policies.py) renders the same spec, so it lives here, once."""

from __future__ import annotations

from tests.oracles.spec import oracle_spec

SPEC = oracle_spec("""\
pools:
  - name: train
    role: training
    gpu: {model: H100, perNode: 8}
    nodes: 13
    reserveNodes: 1
    cpu: 96
    memory: 1Ti
    extraResources: {rdma/ib: 8}
    topology: {levels: [example.com/block, example.com/rack, kubernetes.io/hostname]}
    nodeLabels: {pool: train}
  - name: serve
    role: inference
    gpu: {model: L4, perNode: 4}
    nodes: 10
    cpu: 64
    memory: 512Gi
    nodeLabels: {pool: serve}
cohorts:
  - name: root
  - name: research
    parent: root
teams:
  - name: zeta
    namespaces: [zeta]
    cohort: research
    shares: {train: 35, serve: 25}
    maxUsagePercent: 60
  - name: mid
    namespaces: [mid]
    cohort: research
    shares: {train: 40, serve: 50}
    lendablePercent: 70
  - name: alpha
    namespaces: [alpha]
    cohort: root
    shares: {train: 25, serve: 25}
    maxUsagePercent: 25
  - name: probe
    namespaces: [probe]
    cohort: research
    shares: {serve: 0}
    borrowFrom: [train]
    maxUsagePercent: 50
kueue:
  waitForPodsReady: {blockAdmission: true, timeout: 20m}
  integrations: [batch/job]
""")
