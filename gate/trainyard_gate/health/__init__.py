"""The health quarantine (kind NodeHealthPolicy): a NoSchedule taint on GPU nodes that
Prometheus shows unhealthy, released once healthy again, under a blast-radius cap."""
