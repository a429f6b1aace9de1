"""The other projects' versions trainyard renders for, one home each: the Kubernetes minor
range and the API features each minor has (kubernetes.py), and the Helm charts whose values
it renders into rendered/<env>/installers/ (charts.py). Also the shape of an upstream API
object more than one layer writes: Kubernetes' RBAC PolicyRule (rbac.py), which the
providers state their programs' rules in and k8s/rbac renders.
"""
