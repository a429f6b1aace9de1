"""What both controllers run on: the policy reader, Prometheus, the nodes, the loop, the
Lease, /metrics and /healthz, the JSON log. Nothing here knows a policy kind."""
