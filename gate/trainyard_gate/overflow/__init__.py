"""The overflow gate (kind TaintPolicy): a NoSchedule taint on virtual-kubelet nodes, on or
off from the number of free in-cluster GPUs in Prometheus."""
