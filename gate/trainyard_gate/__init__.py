"""trainyard overflow gate controller: Prometheus free-GPU count -> NoSchedule taint."""
