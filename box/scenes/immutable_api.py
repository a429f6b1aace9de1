"""What the API refuses (scene immutable-change): a plain apply in wave order, and each rule of
generators/gitops/immutable.py tried on the API with a dry-run server-side apply of a changed field.
"""

from __future__ import annotations

import copy
from typing import Any

from box import manifests
from box.kube import FIELD_MANAGER, Kube, Obj
from box.scenes.workloads import SCENE_LABEL
from generators.errors import format_path
from generators.gitops import immutable

NEW_LEVEL = "topology.trainyard.dev/zone"  # prepended to a Topology's levels (never applied)


def plain_apply(kube: Kube, objects: list[Obj]) -> tuple[str, str]:
    """Plain server-side apply in wave order, as Argo CD without the sync options; the
    object it stopped at and the API's message ("" if nothing was refused)."""
    for obj in manifests.in_sync_wave_order(objects):
        try:
            kube.apply(obj)
        except Exception as err:
            return f"{obj['kind']} {obj['metadata']['name']}", _refusal(err)
    return "", ""


def dry_run_apply(kube: Kube, obj: Obj) -> str | None:
    """The API's refusal of a dry-run server-side apply of `obj`; None if admitted."""
    resource = kube.resource(obj["apiVersion"], obj["kind"])
    try:
        kube.dynamic.server_side_apply(
            resource,
            body=obj,
            name=obj["metadata"]["name"],
            namespace=obj["metadata"].get("namespace"),
            field_manager=FIELD_MANAGER,
            force_conflicts=True,
            dry_run="All",
            serialize=False,
        )
    except Exception as err:
        return _refusal(err)
    return None


def _refusal(err: Exception) -> str:
    """The API's own message (the client's summary() of a 4xx), on one line."""
    text = err.summary() if hasattr(err, "summary") else str(err)
    return " ".join(str(text).split())[:300]


def _set(obj: Obj, path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        obj = obj[part]
    obj[path[-1]] = value


def _mutated(rule: immutable.Rule, obj: Obj, objects: list[Obj]) -> Obj:
    """`obj` with the rule's field changed to another valid value."""
    changed = copy.deepcopy(obj)
    old = immutable.value_at(obj, rule.path)
    mark = {SCENE_LABEL: "changed"}
    if rule.path == ("value",):
        new: Any = old + 1
    elif rule.path == ("preemptionPolicy",):
        new = "Never" if old != "Never" else "PreemptLowerPriority"
    elif rule.path == ("spec", "levels"):
        new = [{"nodeLabel": NEW_LEVEL}, *old]
    elif rule.path == ("spec", "nodeLabels"):
        new = {**old, **mark}
    elif rule.path == ("spec", "tolerations"):
        new = [*old, {"key": SCENE_LABEL, "operator": "Exists", "effect": "NoSchedule"}]
    elif rule.path == ("spec", "topologyName"):
        new = f"{old}-changed"
    elif rule.path == ("spec", "clusterQueue"):
        new = next(
            o["metadata"]["name"]
            for o in objects
            if o["kind"] == "ClusterQueue" and o["metadata"]["name"] != old
        )
    elif rule.path == ("roleRef",):
        new = {**old, "name": f"{old['name']}-changed"}
    elif rule.path == ("spec", "selector"):
        new = {**old, "matchLabels": {**old.get("matchLabels", {}), **mark}}
        labels = changed["spec"]["template"]["metadata"].setdefault("labels", {})
        labels.update(mark)  # the template must still match, so only immutability refuses
    else:
        raise ValueError(f"no mutation for {rule.kind} {rule.path}: add one to the scene")
    _set(changed, rule.path, new)
    return changed


def table_on_api(kube: Kube, objects: list[Obj]) -> tuple[list[tuple[str, bool, str]], bool]:
    """Each rule with a rendered object that has its field, changed and dry-run applied; and
    whether a WorkloadPriorityClass value change (mutable) is admitted."""
    found = []
    for rule in immutable.RULES:
        obj = next(
            (
                o
                for o in objects
                if (immutable.group_of(o), o["kind"]) == (rule.group, rule.kind)
                and immutable.value_at(o, rule.path) is not immutable.MISSING
                and rule.applies(o)
            ),
            None,
        )
        if obj is None:
            continue  # not rendered here (e.g. concurrentAdmissionPolicy, DaemonSets)
        refusal = dry_run_apply(kube, _mutated(rule, obj, objects))
        name = f"{rule.kind} {format_path(rule.path)}"
        found.append((name, refusal is not None, refusal or "admitted"))
    wpc = copy.deepcopy(next(o for o in objects if o["kind"] == "WorkloadPriorityClass"))
    wpc["value"] += 1
    return found, dry_run_apply(kube, wpc) is None
