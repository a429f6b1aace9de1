"""Objects fit what Argo CD and the apiserver can store.

Client-side apply copies the whole object, as JSON, into the
kubectl.kubernetes.io/last-applied-configuration annotation, and all annotations of an
object together must stay under 262,144 bytes: a bigger object fails to sync unless it is
applied server-side (annotation argocd.argoproj.io/sync-options with ServerSideApply=true).
A ConfigMap's data and binaryData together must stay under 1 MiB whatever the apply mode.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from typing import Any

from policies.context import SYNC_OPTIONS, Context, Finding, RenderedObject

ID = "size"
RATIONALE = (
    "an object over the annotation limit cannot be client-side applied and a ConfigMap "
    "over 1 MiB is rejected, so either would block the whole sync"
)
SEVERITY = "error"
ANNOTATIONS_MAX_BYTES = 262_144  # apimachinery TotalAnnotationSizeLimitB
CONFIGMAP_MAX_BYTES = 1_048_576  # core/v1 validation: MaxSecretSize applies to ConfigMaps too


def serialized_bytes(obj: Mapping[str, Any]) -> int:
    """Bytes of the object as the compact JSON that last-applied-configuration holds."""
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())


def server_side(item: RenderedObject) -> bool:
    options = str(item.annotations.get(SYNC_OPTIONS, ""))
    return "ServerSideApply=true" in (o.strip() for o in options.split(","))


def configmap_bytes(obj: Mapping[str, Any]) -> int:
    """Key and value bytes of data plus decoded binaryData: what the apiserver counts."""
    total = 0
    for key, value in (obj.get("data") or {}).items():
        total += len(str(key).encode()) + len(str(value).encode())
    for key, value in (obj.get("binaryData") or {}).items():
        try:
            decoded = len(base64.b64decode(str(value), validate=True))
        except (binascii.Error, ValueError):
            decoded = len(str(value).encode())
        total += len(str(key).encode()) + decoded
    return total


def check(ctx: Context) -> Iterable[Finding]:
    for item in ctx.objects:
        size = serialized_bytes(item.obj)
        if size >= ANNOTATIONS_MAX_BYTES and not server_side(item):
            yield item.finding(
                f"{size:,} bytes serialized, over the {ANNOTATIONS_MAX_BYTES:,}-byte annotation "
                f"limit of client-side apply; annotate {SYNC_OPTIONS}: ServerSideApply=true "
                "or split it"
            )
        if item.kind == "ConfigMap" and (data := configmap_bytes(item.obj)) >= CONFIGMAP_MAX_BYTES:
            yield item.finding(
                f"data is {data:,} bytes; a ConfigMap holds less than {CONFIGMAP_MAX_BYTES:,} (1 MiB)"
            )
