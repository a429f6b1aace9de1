"""Checks of what trainyard renders: offline pinned schemas and the kubeconform runner,
promtool over the rules, and against a live Prometheus (doctor.py) with the reader of what a
PromQL expression selects (promql_ast.py, also read by the monitoring installers' values).
"""
