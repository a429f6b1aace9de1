"""Plain-dict access to the test apiserver through the official client's DynamicClient.

Server-side apply (not dry-run) with one field manager, reads, deletes, and the two jobs a
controller-manager would do that tests need when tearing down: emptying and finalizing
namespaces (the namespace controller) and dropping finalizers nobody will ever remove.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from kubernetes import config
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError

# The one definition is generators'; box's own modules and tests import it from here.
from generators.k8s.objects import Obj as Obj

T = TypeVar("T")
FIELD_MANAGER = "trainyard-tests"


class Kube:
    """One API client for one kubeconfig; every method speaks plain dicts."""

    def __init__(self, kubeconfig: Path, discovery_cache: Path) -> None:
        self.api_client = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
        # Typed as Any: the client's dynamic module has no annotations.
        self.dynamic: Any = DynamicClient(self.api_client, cache_file=str(discovery_cache))  # type: ignore[no-untyped-call]

    def close(self) -> None:
        self.api_client.close()

    def resource(self, api_version: str, kind: str) -> Any:
        return self.dynamic.resources.get(api_version=api_version, kind=kind)

    def apply(self, obj: Obj, field_manager: str = FIELD_MANAGER) -> Obj:
        """Server-side apply `obj` (force: the tests own every field they apply)."""
        resource = self.resource(obj["apiVersion"], obj["kind"])
        meta = obj["metadata"]
        result = self.dynamic.server_side_apply(
            resource,
            body=obj,
            name=meta["name"],
            namespace=meta.get("namespace"),
            field_manager=field_manager,
            force_conflicts=True,
            # Unknown or duplicate fields are errors, not warnings (kubectl's --validate=strict).
            query_params=[("fieldValidation", "Strict")],
            serialize=False,
        )
        return _json(result)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        resource = self.resource(api_version, kind)
        try:
            return _json(self.dynamic.get(resource, name=name, namespace=namespace, serialize=False))
        except NotFoundError:
            return None

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, label_selector: str | None = None
    ) -> list[Obj]:
        resource = self.resource(api_version, kind)
        items = _json(
            self.dynamic.get(resource, namespace=namespace, label_selector=label_selector, serialize=False)
        )
        return list(items.get("items") or [])

    def create(self, obj: Obj, dry_run: bool = False) -> Obj:
        """POST `obj`; with dry_run the server admits (mutates, validates) but stores nothing."""
        resource = self.resource(obj["apiVersion"], obj["kind"])
        namespace = obj["metadata"].get("namespace")
        extra = {"dry_run": "All"} if dry_run else {}
        return _json(self.dynamic.create(resource, body=obj, namespace=namespace, serialize=False, **extra))

    def patch_status(
        self, api_version: str, kind: str, name: str, status: Obj, namespace: str | None = None
    ) -> Obj:
        """Merge-patch the status subresource (what a kubelet or controller would write)."""
        resource = self.resource(api_version, kind).subresources["status"]
        patched = self.dynamic.patch(
            resource,
            body={"status": status},
            name=name,
            namespace=namespace,
            content_type="application/merge-patch+json",
            serialize=False,
        )
        return _json(patched)

    def merge_patch(
        self, api_version: str, kind: str, name: str, body: Obj, namespace: str | None = None
    ) -> Obj:
        resource = self.resource(api_version, kind)
        patched = self.dynamic.patch(
            resource,
            body=body,
            name=name,
            namespace=namespace,
            content_type="application/merge-patch+json",
            serialize=False,
        )
        return _json(patched)

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        """Delete if present; drop finalizers first (no controller will ever remove them)."""
        resource = self.resource(api_version, kind)
        with contextlib.suppress(NotFoundError):
            current = self.get(api_version, kind, name, namespace)
            if current and current["metadata"].get("finalizers"):
                self.merge_patch(api_version, kind, name, {"metadata": {"finalizers": None}}, namespace)
            self.dynamic.delete(
                resource,
                name=name,
                namespace=namespace,
                grace_period_seconds=0,
                propagation_policy="Background",
            )

    def raw_get(self, path: str) -> Obj:
        return _json(self.dynamic.request("get", path, serialize=False))

    def raw_post(self, path: str, body: Obj) -> Obj:
        return _json(self.dynamic.request("post", path, body=body, serialize=False))


def _json(response: Any) -> Obj:
    """The decoded body. Raw responses, not the client's ResourceInstance: wrapping a CRD of
    a few MB field by field takes seconds."""
    return dict(json.loads(response.data))


def refusal(kube: Kube, obj: Obj) -> str | None:
    """The API's refusal message for a dry-run create of `obj`, None if it was admitted."""
    try:
        kube.create(obj, dry_run=True)
    except Exception as err:
        return str(err)
    return None


def wait_for(check: Callable[[], T | None], timeout: float, what: str, interval: float = 0.2) -> T:
    """Poll `check` until it returns something truthy; AssertionError naming `what` if not."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def condition(obj: Obj | None, kind: str) -> Obj | None:
    """The status condition of type `kind`, if any."""
    if not obj:
        return None
    for entry in (obj.get("status") or {}).get("conditions") or []:
        if entry.get("type") == kind:
            return dict(entry)
    return None


def is_true(obj: Obj | None, kind: str) -> bool:
    found = condition(obj, kind)
    return bool(found and found.get("status") == "True")


def wait_true(
    kube: Kube,
    api_version: str,
    kind: str,
    name: str,
    condition_type: str,
    timeout: float,
    namespace: str | None = None,
) -> Obj:
    """Until the object's `condition_type` condition is True; returns the object."""

    def check() -> Obj | None:
        found = kube.get(api_version, kind, name, namespace)
        return found if is_true(found, condition_type) else None

    return wait_for(check, timeout, f"{kind} {name} {condition_type}")


def wait_gone(kube: Kube, api_version: str, kind: str, name: str, timeout: float) -> None:
    wait_for(lambda: kube.get(api_version, kind, name) is None, timeout, f"{kind} {name} gone")


def namespaced_kinds(kube: Kube) -> list[tuple[str, str]]:
    """(apiVersion, kind) of every namespaced, deletable, listable resource the server serves."""
    versions = ["v1"]
    groups = kube.raw_get("/apis")
    versions += [group["preferredVersion"]["groupVersion"] for group in groups.get("groups", [])]
    found: list[tuple[str, str]] = []
    for version in versions:
        prefix = "/api/v1" if version == "v1" else f"/apis/{version}"
        for entry in kube.raw_get(prefix).get("resources", []):
            verbs = set(entry.get("verbs") or [])
            if entry.get("namespaced") and "/" not in entry["name"] and {"list", "delete"} <= verbs:
                found.append((version, entry["kind"]))
    return found


def purge_namespaces(kube: Kube, names: Iterable[str]) -> None:
    """Do what the namespace controller does: delete the contents, then finalize.

    There is no controller-manager, so a deleted namespace would stay Terminating and a
    later test recreating it would fail.
    """
    names = [name for name in names if kube.get("v1", "Namespace", name)]
    if not names:
        return
    kinds = [entry for entry in namespaced_kinds(kube) if entry != ("v1", "Event")]
    for name in names:
        for api_version, kind in kinds:
            for item in kube.list(api_version, kind, namespace=name):
                kube.delete(api_version, kind, item["metadata"]["name"], name)
        kube.delete("v1", "Namespace", name)
        finalize = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name},
            "spec": {"finalizers": []},
        }
        with contextlib.suppress(NotFoundError):
            kube.dynamic.request("put", f"/api/v1/namespaces/{name}/finalize", body=finalize)
        wait_gone(kube, "v1", "Namespace", name, 30)
