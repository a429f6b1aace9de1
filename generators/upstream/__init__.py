"""The other projects' versions trainyard renders for, one home each: the Kubernetes minor
range and the API features each minor has (kubernetes.py), and the Helm charts whose values
it renders into rendered/<env>/installers/ (charts.py).
"""
