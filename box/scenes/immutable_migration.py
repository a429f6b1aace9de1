"""The spec copies of scene immutable-change, and the documented migration for a refused
change (docs/immutable-fields.md): the pool renamed, applied in wave order, the old flavor and
topology pruned last once Kueue lifts its finalizers; then renamed back the same way.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from box import adapter, manifests
from box.kube import Kube, Obj, is_true, wait_for
from box.nodes import HOSTNAME
from box.scale import scaled_checkout
from box.scenes.context import SceneContext
from generators.diff.report import environment_problems
from generators.layout import ENV_DIR
from generators.model.load import load
from generators.pipeline.render import RenderedFile, render_tree
from generators.pipeline.render import objects as objects_of
from generators.spec.load import load_document

KUEUE_API = "kueue.x-k8s.io/v1beta2"
SECONDS = 120


def box_sync(kube: Kube, objects: list[Obj]) -> None:
    """The box's sync of a rendering (box/up.py): every object but the prometheus-adapter's
    Service and APIService, which `box up` wires to the adapter's host process
    (box/adapter.py register). Syncing the rendered ones would point the aggregator at an
    in-cluster Service nothing serves, and External metrics would be gone for the next scene."""
    manifests.apply_all(kube, box_objects(objects))


def box_objects(objects: list[Obj]) -> list[Obj]:
    """`objects` without the ones `box up` wires itself (box_sync)."""
    return [o for o in objects if not adapter.deferred(o)]


@dataclass
class Migration:
    """The documented migration for a refused change: the pool renamed, with its new levels."""

    pool: str
    renamed: str
    levels: list[str]
    check_lines: list[str]  # what the check says about the rename (nothing refused)
    pruned: list[str]  # what the sync pruned last, once Kueue lifted its finalizers
    queue_flavors: dict[str, list[str]]  # ClusterQueue -> flavors, live, of queues that had the pool
    live_levels: list[str]  # the new Topology's levels, live
    queues_active: bool
    back: list[str] = field(default_factory=list)  # pruned when renaming back

    @property
    def ok(self) -> bool:
        old = [f"ResourceFlavor {self.pool}", f"Topology {self.pool}"]
        return (
            not any(": error: " in line for line in self.check_lines)
            and set(old) <= set(self.pruned)
            and bool(self.queue_flavors)
            and all(self.renamed in f and self.pool not in f for f in self.queue_flavors.values())
            and self.live_levels == self.levels
            and self.queues_active
            and {f"ResourceFlavor {self.renamed}", f"Topology {self.renamed}"} <= set(self.back)
        )

    def lines(self) -> list[str]:
        return [
            f"migration: pool {self.pool} renamed {self.renamed} with levels [{', '.join(self.levels)}]; "
            f"check: {'; '.join(self.check_lines) or 'nothing refused'}",
            f"  pruned last (gone: Kueue lifted its finalizers): {', '.join(self.pruned)}",
            f"  ClusterQueues now: {self.queue_flavors}; live levels [{', '.join(self.live_levels)}]; "
            f"Active: {self.queues_active}",
            f"  renamed back the same way; pruned: {', '.join(self.back)}",
        ]


def spec_copy(context: SceneContext, name: str) -> Path:
    """environments/ copied (scaled like the box) into the run folder; returns its root."""
    return scaled_checkout(
        manifests.REPO_ROOT, context.env.name, context.state.scale, context.folder / "immutable-change" / name
    )


def edited_render(root: Path, env_name: str, edit: Any) -> list[RenderedFile]:
    """Apply `edit(document, merged)` to the copy's environment file; load and render it."""
    path = root / ENV_DIR / f"{env_name}.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(document, load_document(root, env_name).value)
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return render_tree(load(root, env_name))


def check_lines(root: Path, env_name: str, before: list[Obj], after: list[RenderedFile]) -> list[str]:
    """What `generate.py diff` prints for these renderings (its own function)."""
    old = {manifests.identity(o): o for o in before}
    pairs = [
        (old[manifests.identity(f.obj)], f.obj, f"rendered/{env_name}/{f.path}")
        for f in after
        if f.is_object and manifests.identity(f.obj) in old
    ]
    return [problem.format() for problem in environment_problems(root, env_name, pairs)]


def queues_active(kube: Kube, objects: list[Obj]) -> bool:
    names = [o["metadata"]["name"] for o in objects if o["kind"] == "ClusterQueue"]
    wait_for(
        lambda: all(is_true(kube.get(KUEUE_API, "ClusterQueue", n), "Active") for n in names),
        SECONDS,
        "every ClusterQueue Active",
    )
    return True


def rename_pool(value: Any, pool: str, renamed: str, under_labels: bool = False) -> Any:
    """`value` (a spec, or part of one) with every mention of `pool` renamed, as a key or a
    value, except under nodeLabels (the nodes are labelled so)."""
    if isinstance(value, dict):
        return {
            (renamed if k == pool and not under_labels else k): rename_pool(
                v, pool, renamed, under_labels or k == "nodeLabels"
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [rename_pool(v, pool, renamed, under_labels) for v in value]
    return renamed if value == pool and not under_labels else value


def _rename(pool: str, renamed: str, levels: list[str]) -> Any:
    """Every mention of the pool in the spec (its name, shares keys, borrowFrom, health pools)
    renamed, its nodeLabels kept (the nodes are labelled so), its levels replaced; the merged
    spec written whole, so mentions in the base file are renamed too."""

    def edit(document: Obj, merged: Obj) -> None:
        whole = rename_pool(copy.deepcopy(merged), pool, renamed)
        for entry in whole["pools"]:
            if entry["name"] == renamed:
                entry["topology"]["levels"] = levels
        document.clear()
        document.update(whole)

    return edit


def migrate(context: SceneContext, original: list[Obj], pool: str) -> Migration:
    """Rename the pool with hostname-only levels, sync (apply in wave order, prune last),
    read back what Kueue holds; then rename it back the same way."""
    kube, renamed, levels = context.kube, f"{pool}-v2", [HOSTNAME]
    root = spec_copy(context, "rename")
    files = edited_render(root, context.env.name, _rename(pool, renamed, levels))
    moved = objects_of(files)
    lines = check_lines(root, context.env.name, original, files)
    context.say(f"immutable-change: migration, pool {pool} renamed {renamed}")
    try:
        box_sync(kube, moved)
        pruned = manifests.prune(kube, _not_in(original, moved))
        had_pool = [
            o["metadata"]["name"] for o in original if o["kind"] == "ClusterQueue" and pool in _flavors(o)
        ]
        flavors = {name: _flavors(kube.get(KUEUE_API, "ClusterQueue", name) or {}) for name in had_pool}
        topology = kube.get(KUEUE_API, "Topology", renamed) or {}
        live_levels = [level["nodeLabel"] for level in (topology.get("spec") or {}).get("levels") or []]
        migration = Migration(
            pool, renamed, levels, lines, pruned, flavors, live_levels, queues_active(kube, moved)
        )
    finally:  # the way back is the same migration: apply the original, prune the renamed
        context.say(f"immutable-change: migration back, {renamed} renamed {pool}")
        box_sync(kube, original)
        back = manifests.prune(kube, _not_in(moved, original))
    migration.back = back
    return migration


def _not_in(objects: list[Obj], others: list[Obj]) -> list[Obj]:
    keep = {manifests.identity(o) for o in others}
    return [o for o in objects if manifests.identity(o) not in keep]


def _flavors(queue: Obj) -> list[str]:
    return [
        f["name"]
        for group in (queue.get("spec") or {}).get("resourceGroups") or []
        for f in group.get("flavors") or []
    ]
