"""Scene immutable-change: a change to an immutable field reaches the
cluster by the documented procedure (docs/immutable-fields.md), and later waves still apply.

On a copy of environments/ (scaled like the box; never rendered/), the default training tier's
value goes up by one (PriorityClass `value`, immutable: recreated, Force=true,Replace=true;
WorkloadPriorityClass `value`, mutable) and the gate opens a second later (its ConfigMap in
wave 4, its Deployment in wave 5). The scene shows, with the real apiserver and Kueue:
1. the project's check (`generate.py diff`'s) notes the PriorityClass as recreated;
2. a plain server-side apply in wave order is refused at the PriorityClass, and the wave-4
   and wave-5 objects stay unapplied (the finding);
3. the box's sync (box/manifests.py apply_all, honouring Force=true,Replace=true as Argo CD
   does; all but the adapter objects `box up` wires itself: immutable_migration.box_sync)
   applies everything; a pod admitted before keeps its priority, one created
   after gets the new one; every ClusterQueue stays Active;
4. every rule of generators/gitops/immutable.py whose field the environment renders is refused by
   the API (dry-run), and a WorkloadPriorityClass value change is admitted;
5. a Topology `levels` change is refused by the check at its spec line with the migration
   path, and by the API when applied plainly;
6. that migration works: the pool renamed with new levels is synced in wave order, the old
   flavor and topology are pruned last and gone (Kueue lifted its finalizers), the queues
   hold the new flavor and stay Active; then it is renamed back the same way
   (immutable_migration.py).
Then the original rendering is synced back by the same procedure. What the API refuses is
tried in immutable_api.py.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from typing import Any

from box import manifests
from box.kube import Kube, Obj
from box.scenes.context import SceneContext
from box.scenes.immutable_api import NEW_LEVEL, plain_apply, table_on_api
from box.scenes.immutable_migration import (
    Migration,
    box_objects,
    box_sync,
    check_lines,
    edited_render,
    migrate,
    queues_active,
    spec_copy,
)
from box.scenes.workloads import SCENE_LABEL, scene_object
from generators.components.priorities import PODSET_LABEL
from generators.diff.fields import FieldChange, changed_fields
from generators.pipeline.render import objects as objects_of
from generators.pipeline.render import render_tree

PRIORITY_KINDS = ("PriorityClass", "WorkloadPriorityClass")
DEFAULT_OPEN_AFTER = 30  # schemas/environment.schema.json, overflow.gate.openAfterSeconds


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
    migration: Migration | None = None
    restored: bool = False

    @property
    def ok(self) -> bool:
        old, new = self.values
        return (
            self.naive_refused_at == f"PriorityClass {self.tier}"
            and bool(self.later_unapplied)
            and self.later_applied == self.later_unapplied
            and self.live_values == {"PriorityClass": new, "WorkloadPriorityClass": new}
            and self.pod_priorities == (old, new)
            and self.queues_active
            and self.recreated == [f"PriorityClass {self.tier}"]
            and any(": note: " in line for line in self.check_lines)
            and not any(": error: " in line for line in self.check_lines)
            and bool(self.table)
            and all(refused for _, refused, _ in self.table)
            and self.mutable_admitted
            and any(": error: " in line for line in self.topology_check)
            and bool(self.topology_naive)
            and self.migration is not None
            and self.migration.ok
            and self.restored
        )

    def lines(self) -> list[str]:
        old, new = self.values
        out = [
            f"change: tier {self.tier} {old} -> {new}; the gate opens a second later (waves 4, 5)",
            *(f"check: {line}" for line in self.check_lines),
            f"plain apply, wave order: refused at {self.naive_refused_at}: {self.naive_message}",
            f"  never applied: {', '.join(self.later_unapplied)}",
            f"sync with Force=true,Replace=true: recreated {', '.join(self.recreated)}; live values "
            f"{self.live_values}; applied: {', '.join(self.later_applied)}",
            f"pod admitted before keeps priority {self.pod_priorities[0]}; "
            f"pod created after: {self.pod_priorities[1]}",
            f"ClusterQueues Active: {self.queues_active}",
            *(
                f"API on {rule}: {'refused' if refused else 'ADMITTED'}: {message}"
                for rule, refused, message in self.table
            ),
            "API on WorkloadPriorityClass value: "
            + ("admitted (mutable)" if self.mutable_admitted else "REFUSED"),
            *(f"check: {line}" for line in self.topology_check),
            f"plain apply of the Topology change: refused: {self.topology_naive}",
            *(self.migration.lines() if self.migration else ["migration: not reached"]),
            f"original rendering synced back: {self.restored}",
        ]
        return [*out, "OK" if self.ok else "BROKEN"]


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


def _pod(namespace: str, name: str, tier: str) -> Obj:
    """A pod that stays Pending (no node has the label): its priority is set at admission.
    It carries Kueue's podset label as a stand-in for a pod of a Job Kueue started: only
    those may run at a training tier in a team namespace (docs/scheduling.md)."""
    spec = {
        "priorityClassName": tier,
        "nodeSelector": {SCENE_LABEL: "nowhere"},
        "containers": [{"name": "main", "image": "registry.example/idle:1"}],
    }
    return scene_object("v1", "Pod", name, namespace, spec, **{PODSET_LABEL: "main"})


def _live(kube: Kube, obj: Obj) -> Obj | None:
    return kube.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))


def _show(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{obj['kind']} {meta.get('namespace', '') + '/' if meta.get('namespace') else ''}{meta['name']}"


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
    return {
        _show(o): str((_live(kube, o) or {}).get("metadata", {}).get("uid"))
        for o in objects
        if o["kind"] in PRIORITY_KINDS
    }


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
    root = spec_copy(context, "tier")
    files = edited_render(root, env.name, _tier_change(tier.name))
    changed = objects_of(files)
    # Later-wave objects the change touches, and the fields it changes in each (the live
    # object also holds defaults and other managers' fields: only these are compared).
    later = [
        (o, base, changed_fields(base, o))
        for o in changed
        if int(o["metadata"]["annotations"][manifests.SYNC_WAVE]) >= 4
        and (base := _version_in(original, o)) is not None
        and changed_fields(base, o)
    ]
    namespace = next(
        t.namespaces[0] for t in env.teams if any(q.team == t.name and q.topology for q in env.cluster_queues)
    )
    pods = [f"priority-{when}-{uuid.uuid4().hex[:6]}" for when in ("before", "after")]
    context.say(f"immutable-change: tier {tier.name} {tier.value} -> {tier.value + 1}")
    try:
        kube.create(_pod(namespace, pods[0], tier.name))
        lines = check_lines(root, env.name, original, files)
        refused_at, message = plain_apply(kube, box_objects(changed))
        unapplied = [_show(o) for o, _, fields in later if not _holds(kube, o, fields)]
        context.say("immutable-change: syncing the change with Force=true,Replace=true honoured")
        uids = _uids(kube, original)
        box_sync(kube, changed)
        recreated = [name for name, uid in _uids(kube, original).items() if uids.get(name) != uid]
        applied = [_show(o) for o, _, fields in later if _holds(kube, o, fields)]
        live = {
            o["kind"]: int((_live(kube, o) or {}).get("value", 0))
            for o in changed
            if o["kind"] in PRIORITY_KINDS and o["metadata"]["name"] == tier.name
        }
        kube.create(_pod(namespace, pods[1], tier.name))
        before, after = (_priority(kube, namespace, pod) for pod in pods)
        result = ImmutableChange(
            tier.name,
            (tier.value, tier.value + 1),
            lines,
            refused_at,
            message,
            unapplied,
            applied,
            live,
            (before, after),
            recreated,
            queues_active(kube, changed),
        )
        context.say("immutable-change: every rule of generators/gitops/immutable.py on the API (dry-run)")
        result.table, result.mutable_admitted = table_on_api(kube, original)
        pool = next(p for p in env.pools if p.topology_levels)
        topo_root = spec_copy(context, "levels")
        topo = edited_render(topo_root, env.name, _levels_change(pool.name))
        result.topology_check = check_lines(topo_root, env.name, original, topo)
        result.topology_naive = plain_apply(kube, [o for o in objects_of(topo) if o["kind"] == "Topology"])[1]
        result.migration = migrate(context, original, pool.name)
    finally:
        for pod in pods:
            kube.delete("v1", "Pod", pod, namespace)
        context.say("immutable-change: syncing the original rendering back")
        box_sync(kube, original)
    priorities = [o for o in original if o["kind"] in PRIORITY_KINDS]
    result.restored = (
        all(_live(kube, o) is not None for o in original)
        and all(manifests.in_sync(o, _live(kube, o)) for o in priorities)
        and all(_holds(kube, base, fields) for _, base, fields in later)
    )
    return result
