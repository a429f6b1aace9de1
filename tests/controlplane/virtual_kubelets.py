"""What the virtual-kubelet tests of this folder share (test_interlink_vk.py, test_mock_vk.py):
one rendered object by kind and name, the rendered container arguments with local values, and
a kubeconfig that authenticates as a rendered ServiceAccount."""

from __future__ import annotations

from pathlib import Path

import yaml

from box.kube import Kube, Obj
from tests.controlplane.harness import ControlPlane

NAMESPACE = "trainyard-system"  # overflow.namespace (the schema's default)


def rendered(objects: list[Obj], kind: str, name: str) -> Obj:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def with_flags(args: list[str], values: dict[str, str]) -> list[str]:
    """The rendered container's `--flag=value` arguments, the flags named in `values` given
    the test's value (a local path or port) and every other argument as rendered; each named
    flag must be rendered."""
    flags = [a.split("=", 1)[0] for a in args]
    missing = set(values) - set(flags)
    assert not missing, f"not in the rendered arguments: {sorted(missing)}"
    return [f"{flag}={values[flag]}" if flag in values else a for flag, a in zip(flags, args, strict=True)]


def service_account_kubeconfig(kube: Kube, plane: ControlPlane, account: str, path: Path) -> Path:
    """A kubeconfig authenticating as the rendered ServiceAccount (a TokenRequest)."""
    assert plane.certs is not None
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    answer = kube.dynamic.request(
        "post", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{account}/token", body=request
    )
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "sa",
                "clusters": [
                    {
                        "name": "test",
                        "cluster": {"server": plane.url, "certificate-authority": str(plane.certs.ca_cert)},
                    }
                ],
                "users": [{"name": account, "user": {"token": answer.status.token}}],
                "contexts": [{"name": "sa", "context": {"cluster": "test", "user": account}}],
            }
        ),
        encoding="utf-8",
    )
    return path
