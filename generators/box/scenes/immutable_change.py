"""Scene immutable-change (issue 21, scene 5): a change to an immutable field reaches the
cluster by the documented procedure (docs/immutable-fields.md), and later waves still apply.

On a copy of environments/ (scaled like the box; never rendered/), the default training tier's
value goes up by one (PriorityClass `value`, immutable: recreated, Force=true,Replace=true;
WorkloadPriorityClass `value`, mutable) and the gate opens a second later (its ConfigMap in
wave 4, its Deployment in wave 5). The scene shows, with the real apiserver and Kueue:
1. the project's check (`generate.py diff`'s) notes the PriorityClass as recreated;
2. a plain server-side apply in wave order is refused at the PriorityClass, and the wave-4
   and wave-5 objects stay unapplied (the finding);
3. the box's sync (generators/box/manifests.py apply_all, honouring Force=true,Replace=true as
   Argo CD does) applies everything; a pod admitted before keeps its priority, one created
   after gets the new one; every ClusterQueue stays Active;
4. every rule of generators/immutable.py whose field the environment renders is refused by
   the API (dry-run), and a WorkloadPriorityClass value change is admitted;
5. a Topology `levels` change is refused by the check at its spec line with the migration
   path, and by the API when applied plainly.
Then the original rendering is synced back by the same procedure.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from generators import immutable
from generators.box import manifests
from generators.box.kube import FIELD_MANAGER, Kube, Obj, is_true, wait_for
from generators.box.scale import scaled_checkout
from generators.box.scenes import SceneContext
from generators.diff.fields import FieldChange, changed_fields
from generators.diff.immutable import environment_problems
from generators.errors import format_path
from generators.layout import ENV_DIR
from generators.model import load
from generators.render import RenderedFile, render_tree
from generators.render import objects as objects_of
from generators.spec.load import load_document

KUEUE_API = "kueue.x-k8s.io/v1beta2"
SCENE_LABEL = "trainyard.dev/box-scene"
SECONDS = 120
PRIORITY_KINDS = ("PriorityClass", "WorkloadPriorityClass")
DEFAULT_OPEN_AFTER = 30  # schemas/environment.schema.json, overflow.gate.openAfterSeconds
NEW_LEVEL = "topology.trainyard.dev/zone"  # prepended to a Topology's levels (never applied)


@dataclass
class ImmutableChange:
    tier: str
    values: tuple[int, int]  # the tier's value before and after
    check_lines: list[str]  # the check's lines for the tier change
    naive_refused_at: str  # what the plain apply stopped at
    naive_message: str
    later_unapplied: list[str]  # later-wave objects the plain apply never reached
    later_applied: list[str]  # the same objects, in sync after the procedure
    live_values: dict[str, int]  # PriorityClass / WorkloadPriorityClass value after the procedure
    pod_priorities: tuple[int, int]  # a pod admitted before the change, one after
    recreated: list[str]  # objects whose uid the sync changed (deleted and created)
    queues_active: bool
    table: list[tuple[str, bool, str]] = field(default_factory=list)  # (rule, refused, message)
    mutable_admitted: bool = False  # WorkloadPriorityClass value change admitted
    topology_check: list[str] = field(default_factory=list)
    topology_naive: str = ""
    restored: bool = False

    @property
    def ok(self) -> bool:
        old, new = self.values
        return (self.naive_refused_at == f"PriorityClass {self.tier}" and bool(self.later_unapplied)
                and self.later_applied == self.later_unapplied
                and self.live_values == {"PriorityClass": new, "WorkloadPriorityClass": new}
                and self.pod_priorities == (old, new) and self.queues_active
                and self.recreated == [f"PriorityClass {self.tier}"]
                and any(": note: " in line for line in self.check_lines)
                and not any(": error: " in line for line in self.check_lines)
                and bool(self.table) and all(refused for _, refused, _ in self.table)
                and self.mutable_admitted
                and any(": error: " in line for line in self.topology_check) and bool(self.topology_naive)
                and self.restored)  # fmt: skip

    def lines(self) -> list[str]:
        old, new = self.values
        out = [f"change: tier {self.tier} {old} -> {new}; the gate opens a second later (waves 4, 5)",
               *(f"check: {line}" for line in self.check_lines),
               f"plain apply, wave order: refused at {self.naive_refused_at}: {self.naive_message}",
               f"  never applied: {', '.join(self.later_unapplied)}",
               f"sync with Force=true,Replace=true: recreated {', '.join(self.recreated)}; live values "
               f"{self.live_values}; applied: {', '.join(self.later_applied)}",
               f"pod admitted before keeps priority {self.pod_priorities[0]}; "
               f"pod created after: {self.pod_priorities[1]}",
               f"ClusterQueues Active: {self.queues_active}",
               *(f"API on {rule}: {'refused' if refused else 'ADMITTED'}: {message}"
                 for rule, refused, message in self.table),
               "API on WorkloadPriorityClass value: "
               + ("admitted (mutable)" if self.mutable_admitted else "REFUSED"),
               *(f"check: {line}" for line in self.topology_check),
               f"plain apply of the Topology change: refused: {self.topology_naive}",
               f"original rendering synced back: {self.restored}"]  # fmt: skip
        return [*out, "OK" if self.ok else "BROKEN"]


def _copy(context: SceneContext, name: str) -> Path:
    """environments/ copied (scaled like the box) into the run folder; returns its root."""
    return scaled_checkout(manifests.REPO_ROOT, context.env.name, context.state.scale,
                           context.folder / "immutable-change" / name)  # fmt: skip


def _edit(root: Path, env_name: str, edit: Any) -> list[RenderedFile]:
    """Apply `edit(document, merged)` to the copy's environment file; load and render it."""
    path = root / ENV_DIR / f"{env_name}.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(document, load_document(root, env_name).value)
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return render_tree(load(root, env_name))


def _tier_change(tier: str) -> Any:
    def edit(document: Obj, merged: Obj) -> None:
        tiers = copy.deepcopy(merged["priorities"]["tiers"])  # a list replaces the base's whole
        for entry in tiers:
            if entry["name"] == tier:
                entry["value"] += 1
        document.setdefault("priorities", {})["tiers"] = tiers
        gate = document.setdefault("overflow", {}).setdefault("gate", {})
        gate["openAfterSeconds"] = merged["overflow"]["gate"].get("openAfterSeconds", DEFAULT_OPEN_AFTER) + 1

    return edit


def _levels_change(pool: str) -> Any:
    def edit(document: Obj, merged: Obj) -> None:
        pools = copy.deepcopy(merged["pools"])
        for entry in pools:
            if entry["name"] == pool:
                entry["topology"]["levels"] = [NEW_LEVEL, *entry["topology"]["levels"]]
        document["pools"] = pools

    return edit


def check_lines(root: Path, env_name: str, before: list[Obj], after: list[RenderedFile]) -> list[str]:
    """What `generate.py diff` prints for these renderings (its own function)."""
    old = {manifests.identity(o): o for o in before}
    pairs = [(old[manifests.identity(f.obj)], f.obj, f"rendered/{env_name}/{f.path}")
             for f in after if f.is_object and manifests.identity(f.obj) in old]  # fmt: skip
    return [problem.format() for problem in environment_problems(root, env_name, pairs)]


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
        kube.dynamic.server_side_apply(resource, body=obj, name=obj["metadata"]["name"],
                                       namespace=obj["metadata"].get("namespace"),
                                       field_manager=FIELD_MANAGER, force_conflicts=True, dry_run="All",
                                       serialize=False)  # fmt: skip
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
        new = next(o["metadata"]["name"] for o in objects if o["kind"] == "ClusterQueue"
                   and o["metadata"]["name"] != old)  # fmt: skip
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
        obj = next((o for o in objects if (immutable.group_of(o), o["kind"]) == (rule.group, rule.kind)
                    and immutable.value_at(o, rule.path) is not immutable.MISSING
                    and rule.applies(o)), None)  # fmt: skip
        if obj is None:
            continue  # not rendered here (e.g. concurrentAdmissionPolicy, DaemonSets)
        refusal = dry_run_apply(kube, _mutated(rule, obj, objects))
        name = f"{rule.kind} {format_path(rule.path)}"
        found.append((name, refusal is not None, refusal or "admitted"))
    wpc = copy.deepcopy(next(o for o in objects if o["kind"] == "WorkloadPriorityClass"))
    wpc["value"] += 1
    return found, dry_run_apply(kube, wpc) is None


def _pod(namespace: str, name: str, tier: str) -> Obj:
    """A pod that stays Pending (no node has the label): its priority is set at admission."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {SCENE_LABEL: name}},
            "spec": {"priorityClassName": tier, "nodeSelector": {SCENE_LABEL: "nowhere"},
                     "containers": [{"name": "main", "image": "registry.example/idle:1"}]}}  # fmt: skip


def _live(kube: Kube, obj: Obj) -> Obj | None:
    return kube.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))


def _show(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{obj['kind']} {meta.get('namespace', '') + '/' if meta.get('namespace') else ''}{meta['name']}"


def _queues_active(kube: Kube, objects: list[Obj]) -> bool:
    names = [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterQueue"]
    wait_for(lambda: all(is_true(kube.get(KUEUE_API, "ClusterQueue", n), "Active") for n in names), SECONDS,
             "every ClusterQueue Active")  # fmt: skip
    return True


def _holds(kube: Kube, obj: Obj, fields: list[FieldChange]) -> bool:
    """The live object has `obj`'s value at each changed field's path."""
    live = _live(kube, obj)
    return live is not None and all(_at(live, f.path) == _at(obj, f.path) for f in fields)


def _at(obj: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        try:
            obj = obj[part]
        except (KeyError, IndexError, TypeError):
            return None
    return obj


def _uids(kube: Kube, objects: list[Obj]) -> dict[str, str]:
    """The live uid of every cluster-scoped priority object (a recreate changes it)."""
    return {_show(o): str((_live(kube, o) or {}).get("metadata", {}).get("uid"))
            for o in objects if o["kind"] in PRIORITY_KINDS}


def _priority(kube: Kube, namespace: str, name: str) -> int:
    """The pod's spec.priority, as the Priority admission plugin set it (-1: no pod)."""
    pod = kube.get("v1", "Pod", name, namespace) or {}
    return int((pod.get("spec") or {}).get("priority", -1))


def _version_in(objects: list[Obj], obj: Obj) -> Obj | None:
    return next((o for o in objects if manifests.identity(o) == manifests.identity(obj)), None)


def run(context: SceneContext) -> ImmutableChange:
    """Run the scene (module docstring); the box is synced back to its rendering at the end."""
    kube, env = context.kube, context.env
    if env.overflow is None or not any(p.topology_levels for p in env.pools):
        raise ValueError(f"{env.name} needs overflow and a topology pool for the immutable-change scene")
    tier = env.default_training_tier
    original = objects_of(render_tree(env))
    root = _copy(context, "tier")
    files = _edit(root, env.name, _tier_change(tier.name))
    changed = objects_of(files)
    # Later-wave objects the change touches, and the fields it changes in each (the live
    # object also holds defaults and other managers' fields: only these are compared).
    later = [(o, base, changed_fields(base, o)) for o in changed
             if int(o["metadata"]["annotations"][manifests.SYNC_WAVE]) >= 4
             and (base := _version_in(original, o)) is not None and changed_fields(base, o)]  # fmt: skip
    namespace = next(t.namespaces[0] for t in env.teams
                     if any(q.team == t.name and q.topology for q in env.cluster_queues))  # fmt: skip
    pods = [f"priority-{when}-{uuid.uuid4().hex[:6]}" for when in ("before", "after")]
    context.say(f"immutable-change: tier {tier.name} {tier.value} -> {tier.value + 1}")
    try:
        kube.create(_pod(namespace, pods[0], tier.name))
        lines = check_lines(root, env.name, original, files)
        refused_at, message = plain_apply(kube, changed)
        unapplied = [_show(o) for o, _, fields in later if not _holds(kube, o, fields)]
        context.say("immutable-change: syncing the change with Force=true,Replace=true honoured")
        uids = _uids(kube, original)
        manifests.apply_all(kube, changed)
        recreated = [name for name, uid in _uids(kube, original).items() if uids.get(name) != uid]
        applied = [_show(o) for o, _, fields in later if _holds(kube, o, fields)]
        live = {o["kind"]: int((_live(kube, o) or {}).get("value", 0)) for o in changed
                if o["kind"] in PRIORITY_KINDS and o["metadata"]["name"] == tier.name}
        kube.create(_pod(namespace, pods[1], tier.name))
        before, after = (_priority(kube, namespace, pod) for pod in pods)
        result = ImmutableChange(tier.name, (tier.value, tier.value + 1), lines, refused_at, message,
                                 unapplied, applied, live, (before, after), recreated,
                                 _queues_active(kube, changed))  # fmt: skip
        context.say("immutable-change: every rule of generators/immutable.py on the API (dry-run)")
        result.table, result.mutable_admitted = table_on_api(kube, original)
        pool = next(p for p in env.pools if p.topology_levels)
        topo_root = _copy(context, "levels")
        topo = _edit(topo_root, env.name, _levels_change(pool.name))
        result.topology_check = check_lines(topo_root, env.name, original, topo)
        result.topology_naive = plain_apply(kube, [o for o in objects_of(topo) if o["kind"] == "Topology"])[1]
    finally:
        for pod in pods:
            kube.delete("v1", "Pod", pod, namespace)
        context.say("immutable-change: syncing the original rendering back")
        manifests.apply_all(kube, original)
    priorities = [o for o in original if o["kind"] in PRIORITY_KINDS]
    result.restored = (all(manifests.in_sync(o, _live(kube, o)) for o in priorities)
                       and all(_holds(kube, base, fields) for _, base, fields in later))
    return result
