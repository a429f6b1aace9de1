"""A small environment with health quarantine on: two training pools of 36 and 32 nodes
(reserve 2 and 1), the built-in controller, 3% of each pool, a fleet cap of 4. Shared by
the plan and diff tests, whose expected lines are literals computed by hand from it:
3% of 36 = 1.08 -> 1 node, 3% of 32 = 0.96 -> 0 -> the floor of one node."""

CAP = "  cap: {maxNodes: 4, maxPercentOfPool: 3}\n"  # the line the plan and diff tests edit
SMALL = (
    """name: small
example: true
cluster: {kubernetesVersion: "1.36.2"}
pools:
  - {name: train-gb200, role: training, gpu: {model: GB200, perNode: 4}, nodes: 36, reserveNodes: 2,
     cpu: 144, memory: 800Gi, nodeLabels: {trainyard.dev/pool: train-gb200}}
  - {name: train-h100, role: training, gpu: {model: H100, perNode: 8}, nodes: 32, reserveNodes: 1,
     cpu: 96, memory: 1000Gi, nodeLabels: {trainyard.dev/pool: train-h100}}
teams:
  - name: alpha
    namespaces: [alpha]
    shares: {train-gb200: 100}
  - name: beta
    namespaces: [beta]
    shares: {train-h100: 100}
priorities:
  tiers:
    - {name: train, role: training, value: 1000}
    - {name: serve, role: inference, value: 100}
health:
  backend: trainyard
  image: {repository: ghcr.io/acme/trainyard-gate, tag: 0.1.0}
"""
    + CAP
)
