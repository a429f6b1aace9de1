"""Taints never evict production at once, and inference cannot bypass the overflow gate.

- A NoExecute taint evicts every running pod without a matching toleration the moment it
  lands (a whole pool of serving replicas, or a gang mid-run); a NoExecute toleration with
  tolerationSeconds <= 0 does the same to the pods that carry it. Neither belongs in
  configuration: draining is the gate's and the descheduler's job, with budgets.
- The overflow gate taints external-provider nodes (keys in the rendered TaintPolicy,
  shipped in a ConfigMap) to keep inference in-cluster while GPUs are free. An inference
  workload (inference priority tier, an inference team's namespace, or an inference pool's
  ResourceFlavor) that tolerates that key bypasses the gate.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from policies.context import Context, Finding, RenderedObject
from policies.references import PRIORITY_CLASS_LABEL
from policies.walk import Tree, items_under, label_maps, nodes, show

ID = "taints"
RATIONALE = (
    "a NoExecute taint or zero-second toleration evicts running production at once, and an "
    "inference toleration of the gate taint defeats the overflow gate"
)
SEVERITY = "error"
TAINT_POLICY_KIND = "TaintPolicy"
_TAINT_LISTS = ("taints", "nodeTaints")


def check(ctx: Context) -> Iterable[Finding]:
    gate_keys = _gate_keys(ctx)
    inference = _Inference(ctx)
    for item in ctx.objects:
        for where, document in _documents(item):
            yield from _no_execute(item, where, document)
        if gate_keys and inference.holds(item):
            yield from _gate_tolerations(item, gate_keys, inference)


def _documents(item: RenderedObject) -> Iterator[tuple[str, Tree]]:
    """The object itself, and configuration files inside a ConfigMap (TaintPolicy)."""
    yield "", item.tree
    for key, document in item.embedded:
        yield f"data[{key}].", list(nodes(document))


def _no_execute(item: RenderedObject, where: str, tree: Tree) -> Iterator[Finding]:
    taints = [pair for key in _TAINT_LISTS for pair in items_under(tree, key)]
    taints += [
        ((*path, "taint"), node["taint"]) for path, node in tree if isinstance(node.get("taint"), Mapping)
    ]
    for path, taint in taints:
        if taint.get("effect") == "NoExecute":
            yield item.finding(
                f"{where}{show(path)}: NoExecute taint {taint.get('key')!r} evicts "
                "every running pod without a toleration at once; use NoSchedule"
            )
    for path, toleration in items_under(tree, "tolerations"):
        seconds = toleration.get("tolerationSeconds")
        if toleration.get("effect") == "NoExecute" and isinstance(seconds, int) and seconds <= 0:
            yield item.finding(
                f"{where}{show(path)}: NoExecute toleration with tolerationSeconds "
                f"{seconds} evicts its pods the moment the taint lands"
            )


def _gate_keys(ctx: Context) -> set[str]:
    keys: set[str] = set()
    for item in ctx.objects:
        documents = [item.obj] if item.kind == TAINT_POLICY_KIND else []
        documents += [d for _, d in item.embedded if d.get("kind") == TAINT_POLICY_KIND]
        for document in documents:
            for _, gate in items_under(nodes(document.get("spec") or {}), "gates"):
                taint = gate.get("taint")
                if isinstance(taint, Mapping) and taint.get("key"):
                    keys.add(str(taint["key"]))
    return keys


class _Inference:
    """Which objects run inference: by tier, by team namespace, by pool flavor."""

    def __init__(self, ctx: Context) -> None:
        pool_roles = {pool.name: pool.role for pool in ctx.env.pools}
        self.tiers = {t.name for t in ctx.env.tiers if t.role == "inference"}
        self.namespaces = {
            ns
            for team in ctx.env.teams
            if team.shares and all(pool_roles.get(p) == "inference" for p in team.shares)
            for ns in team.namespaces
        }
        self.flavors = {name for name, role in pool_roles.items() if role == "inference"}

    def holds(self, item: RenderedObject) -> bool:
        if item.kind == "ResourceFlavor":
            return item.name in self.flavors
        return item.namespace in self.namespaces or bool(self.tiers_of(item))

    def tiers_of(self, item: RenderedObject) -> set[str]:
        named = {str(n.get("priorityClassName")) for _, n in item.tree}
        named |= {str(labels.get(PRIORITY_CLASS_LABEL)) for _, labels in label_maps(item.tree)}
        return named & self.tiers


def _gate_tolerations(item: RenderedObject, gate_keys: set[str], inference: _Inference) -> Iterator[Finding]:
    why = (
        f"ResourceFlavor of inference pool {item.name}"
        if item.kind == "ResourceFlavor"
        else f"inference workload (tier {', '.join(sorted(inference.tiers_of(item)))})"
        if inference.tiers_of(item)
        else f"inference namespace {item.namespace}"
    )
    for path, toleration in items_under(item.tree, "tolerations"):
        key = toleration.get("key")
        everything = not key and toleration.get("operator") == "Exists"
        if everything or key in gate_keys:
            what = "tolerates every taint, including" if everything else "tolerates"
            keys = sorted(gate_keys) if everything else [str(key)]
            yield item.finding(
                f"{show(path)}: {why} {what} the overflow gate taint "
                f"{', '.join(map(repr, keys))}; it would bypass the gate"
            )
