"""Quarantine taints keep training off bad nodes; nothing rendered may undo that.

- A ResourceFlavor's tolerations go onto every pod Kueue admits to it: a toleration of a
  quarantine taint (trainyard.dev/gpu-health, or the NVSentinel keys of health.nvsentinel),
  or a key-less Exists one, would send gang members to nodes with bad GPUs, and the
  training-namespace admission policy would then refuse those very pods (admitted, never
  started).
- The health controller may change only nodes labelled trainyard.dev/pool (its rendered
  ValidatingAdmissionPolicy): a pool of its NodeHealthPolicy whose selector does not require
  that label selects nodes it would be refused on, so their quarantine fails at every pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from policies.context import Context, Finding
from policies.walk import items_under, nodes, show

ID = "quarantine"
RATIONALE = (
    "a flavor tolerating a quarantine taint sends training to bad GPUs, and a watched pool the "
    "controller may not touch is never quarantined"
)
SEVERITY = "error"
POOL_LABEL = "trainyard.dev/pool"  # generators/model/health.py POOL_LABEL (policies read output only)


def _tolerates(toleration: Mapping[str, object], keys: set[str]) -> bool:
    key = toleration.get("key")
    if key:
        return key in keys
    return toleration.get("operator") == "Exists" and toleration.get("effect") in (None, "", "NoSchedule")


def check(ctx: Context) -> Iterable[Finding]:
    keys = set(ctx.env.health.taint_keys) if ctx.env.health else set()
    if keys:
        for item in ctx.of_kind("ResourceFlavor"):
            for index, toleration in enumerate(item.spec.get("tolerations") or []):
                if isinstance(toleration, Mapping) and _tolerates(toleration, keys):
                    yield item.finding(
                        f"spec.tolerations[{index}] tolerates the quarantine taint "
                        f"({', '.join(sorted(keys))}): training admitted here would run "
                        "on quarantined nodes"
                    )
    for item in ctx.of_kind("ConfigMap"):
        for key, document in item.embedded:
            if document.get("kind") != "NodeHealthPolicy":
                continue
            for path, pool in items_under(list(nodes(document)), "pools"):
                selector = pool.get("nodeSelector") or {}
                labels = selector.get("matchLabels") if isinstance(selector, Mapping) else None
                if not isinstance(labels, Mapping) or POOL_LABEL not in labels:
                    yield item.finding(
                        f"data[{key}].{show(path)}: pool {pool.get('name')!r} "
                        f"does not select on {POOL_LABEL}: the controller's admission "
                        "policy refuses every change to nodes without it"
                    )
