"""Per-object Argo CD sync options, added centrally in generators/pipeline/render.py like sync waves.

Client-side apply keeps a copy of the whole object in the
kubectl.kubernetes.io/last-applied-configuration annotation, and the API server refuses an
object whose annotations total more than 256 KiB. Objects anywhere near that size (large
Grafana dashboards, embedded configs) are applied server-side, which keeps no such copy;
every other object keeps client-side apply, whose diffs Argo CD has handled longest.

Objects of a kind whose immutable fields are changed by delete-and-recreate
(generators/gitops/immutable.py RECREATE_KINDS: PriorityClass) carry `Force=true,Replace=true`:
Argo CD then replaces them with `kubectl replace --force`, a delete and a create, where an
apply or a plain `Replace=true` (an update) is refused. On these objects only: Argo CD
recreates such an object on every sync that changes it, which is harmless only where a
recreate is (docs/immutable-fields.md).
"""

from __future__ import annotations

from typing import Any

from generators.gitops.immutable import RECREATE_KINDS, group_of

ANNOTATION = "argocd.argoproj.io/sync-options"
SERVER_SIDE_APPLY = "ServerSideApply=true"
# Half the 262,144-byte annotation limit: the JSON copy of the object and the other
# annotations must fit beside each other, and YAML and JSON sizes differ by some percent.
SERVER_SIDE_APPLY_ABOVE_BYTES = 128 * 1024


FORCE_REPLACE = ("Force=true", "Replace=true")


def recreate_options(obj: dict[str, Any]) -> tuple[str, ...]:
    """The options that make Argo CD delete and recreate `obj` on a change (none for most)."""
    return FORCE_REPLACE if (group_of(obj), obj.get("kind")) in RECREATE_KINDS else ()


def needs_server_side_apply(emitted: str) -> bool:
    return len(emitted.encode("utf-8")) > SERVER_SIDE_APPLY_ABOVE_BYTES


def add(obj: dict[str, Any], option: str) -> None:
    """Append `option` to the object's sync-options annotation (comma-separated, no repeats)."""
    annotations = obj.setdefault("metadata", {}).setdefault("annotations", {})
    options = [o for o in annotations.get(ANNOTATION, "").split(",") if o]
    if option not in options:
        annotations[ANNOTATION] = ",".join([*options, option])
