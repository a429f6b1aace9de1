"""Checks of what trainyard renders: offline pinned schemas and the kubeconform runner,
promtool over the rules, and against a live Prometheus (doctor.py), which reads what each
PromQL expression selects with generators/promql/reads.py.
"""
