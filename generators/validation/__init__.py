"""Validation of rendered manifests: offline pinned schemas and the kubeconform runner."""
