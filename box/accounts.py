"""Credentials for the processes beside the box: each authenticates as its ServiceAccount.

A token comes from the apiserver's TokenRequest API, so it is bound to the account the
rendered (or chart) RBAC names, and a process can do exactly what its pod could.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from box.kube import Kube

TOKEN_SECONDS = 7 * 24 * 3600  # a box may stay up for days; the token is for this box only


def token_kubeconfig(kube: Kube, admin_kubeconfig: Path, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig at `path` that authenticates as ServiceAccount namespace/account with a
    token the apiserver issued (TokenRequest), for the cluster of `admin_kubeconfig`."""
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": TOKEN_SECONDS},
    }
    issued = kube.raw_post(f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token", request)
    admin = yaml.safe_load(admin_kubeconfig.read_text(encoding="utf-8"))
    cluster = admin["clusters"][0]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": account, "user": {"token": issued["status"]["token"]}}],
        "contexts": [{"name": account, "context": {"cluster": cluster["name"], "user": account}}],
        "current-context": account,
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    path.chmod(0o600)
    return path
