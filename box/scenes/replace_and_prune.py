"""Scene replace-and-prune: the changes docs/immutable-fields.md says need a recreate or a
rename, each landed as a merged pull request, with the real Argo CD doing the sync.

On the box's repository (box/argocd_repo.py), one change at a time, each committed, pushed and
refreshed (box/scenes/pull_request.py `land`):
1. the default training tier's value goes up by one: its PriorityClass (`value` immutable,
   rendered with `Force=true,Replace=true`) must be deleted and recreated by Argo CD (a new
   uid, the new value), its WorkloadPriorityClass updated in place;
2. the first training pool is renamed `<pool>-v2` with hostname-only levels (the documented
   migration for a Topology `levels` change), and a team is removed (`removable_team`, its
   shares given to a team sharing the same pool): Argo CD creates
   the new ResourceFlavor and Topology, moves the ClusterQueues to them, and prunes the old
   flavor, the old topology and the removed team's objects last (`PruneLast=true`), once
   Kueue lifts its `resource-in-use` finalizers;
3. the original spec lands the same way (the tier back, the pool renamed back, the team
   back), so the box is left as it was.
It reads back only what Argo CD and the cluster report: the operation of each sync (phase,
retries, each object's result: `Pruned`, `Synced`, its message), the live objects (uid,
value, which flavors each ClusterQueue names, Active) and whether the pruned ones are gone.
Exit 1 when a sync does not settle, the PriorityClass was not recreated, or something that
had to be pruned is still there.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import yaml

from box import argocd
from box.argocd_up import Deployed
from box.kube import Kube, Obj, is_true
from box.nodes import HOSTNAME
from box.scenes.context import SceneContext
from box.scenes.immutable_migration import rename_pool
from box.scenes.pull_request import land
from generators.layout import ENV_DIR
from generators.spec.load import load_document

KUEUE_API = "kueue.x-k8s.io/v1beta2"
GONE_SECONDS = 180  # Kueue lifting a finalizer, then the garbage collector
STEP_SECONDS = 240  # one sync of a few objects; a stall is reported with Argo CD's message


@dataclass
class Step:
    change: str
    commit: str = ""
    seconds: float = 0.0
    phase: str = ""
    retries: int = 0
    pruned: list[str] = field(default_factory=list)  # what the operation reports Pruned
    still_there: list[str] = field(default_factory=list)  # should be gone, is not
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.phase == "Succeeded" and self.retries == 0 and not self.still_there and not self.notes

    def line(self) -> str:
        pruned = f"; pruned: {', '.join(self.pruned)}" if self.pruned else ""
        return (
            f"{self.change}: {self.commit[:12]} {self.phase}, {self.retries} retries, "
            f"{self.seconds:.0f}s{pruned}"
        )


@dataclass
class ReplaceAndPrune:
    tier: str
    pool: str
    team: str
    steps: list[Step] = field(default_factory=list)
    priority: tuple[int, int] = (0, 0)  # PriorityClass value before and after step 1
    recreated: bool = False  # a new uid after step 1
    workload_priority: int = 0  # WorkloadPriorityClass value after step 1
    queue_flavors: dict[str, list[str]] = field(default_factory=dict)  # after step 2
    queues_active: bool = False
    restored_priority: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        old, new = self.priority
        return (
            len(self.steps) == 3
            and all(step.ok for step in self.steps)
            and new == old + 1
            and self.recreated
            and self.workload_priority == new
            and bool(self.queue_flavors)
            and all(f"{self.pool}-v2" in f and self.pool not in f for f in self.queue_flavors.values())
            and self.queues_active
            and {f"kueue.x-k8s.io/ResourceFlavor {self.pool}", f"kueue.x-k8s.io/Topology {self.pool}"}
            <= set(self.steps[1].pruned)
            and any(f"ClusterQueue {self.team}" in name for name in self.steps[1].pruned)
            and self.restored_priority == old
            and not self.notes
        )

    def lines(self) -> list[str]:
        old, new = self.priority
        return [
            f"tier {self.tier}: PriorityClass {old} -> {new}, recreated (new uid): {self.recreated}; "
            f"WorkloadPriorityClass {self.workload_priority}",
            f"pool {self.pool} -> {self.pool}-v2, team {self.team} removed: ClusterQueues now "
            f"{self.queue_flavors}, Active: {self.queues_active}",
            *(f"sync {i + 1}: {step.line()}" for i, step in enumerate(self.steps)),
            *(f"STILL THERE: {name}" for step in self.steps for name in step.still_there),
            *(f"NOTE: {note}" for step in self.steps for note in step.notes),
            f"restored: PriorityClass {self.tier} {self.restored_priority}",
            *(f"NOTE: {note}" for note in self.notes),
            "OK" if self.ok else "BROKEN",
        ]


def _edit_tier(document: Obj, merged: Obj, tier: str) -> None:
    tiers = copy.deepcopy(merged["priorities"]["tiers"])  # a list replaces the base's whole
    for entry in tiers:
        if entry["name"] == tier:
            entry["value"] += 1
    document.setdefault("priorities", {})["tiers"] = tiers


def removable_team(merged: Obj) -> str:
    """The last team whose removal leaves a valid spec: no inference service lives in its
    namespaces, and another team shares each of its flavors (and takes its share)."""
    serving = {s.get("namespace") for s in (merged.get("overflow") or {}).get("inference") or []}
    teams = merged["teams"]
    for team in reversed(teams):
        others = [t for t in teams if t is not team]
        if set(team.get("namespaces") or []) & serving:
            continue
        if all(any(f in (t.get("shares") or {}) for t in others) for f in team.get("shares") or {}):
            return str(team["name"])
    raise RuntimeError("no team can be removed with the shares still adding up")


def _rename_and_remove(merged: Obj, pool: str, team: str) -> Obj:
    """The merged spec with every mention of `pool` renamed `<pool>-v2` (its nodeLabels kept:
    the nodes are labelled so), its levels hostname-only, and team `team` removed, its share
    of each flavor given to the first other team sharing it (shares add up to 100)."""
    renamed = f"{pool}-v2"

    whole: Obj = rename_pool(copy.deepcopy(merged), pool, renamed)
    for entry in whole["pools"]:
        if entry["name"] == renamed:
            entry["topology"] = {**(entry.get("topology") or {}), "levels": [HOSTNAME]}
    gone = next(t for t in whole["teams"] if t["name"] == team)
    whole["teams"] = [t for t in whole["teams"] if t is not gone]
    for flavor, share in (gone.get("shares") or {}).items():
        heir = next(t for t in whole["teams"] if flavor in (t.get("shares") or {}))
        heir["shares"][flavor] += share
    return whole


def _sync(context: SceneContext, deployed: Deployed, change: str, expect_gone: list[Obj]) -> Step:
    step = Step(change)
    repo = deployed.repo()
    try:
        step.commit, step.seconds = land(context.kube, deployed, repo, context.env.name, change, STEP_SECONDS)
    except TimeoutError as err:
        step.notes.append(str(err))
        return step
    app = argocd.application(context.kube, deployed.namespace, deployed.application) or {}
    operation = argocd.operation_state(app)
    step.phase = str(operation.get("phase", ""))
    step.retries = int(operation.get("retryCount") or 0)
    step.pruned = [
        argocd.resource_name(r)
        for r in (operation.get("syncResult") or {}).get("resources") or []
        if r.get("status") == "Pruned"
    ]
    deadline = time.monotonic() + GONE_SECONDS
    while True:
        step.still_there = [_name(o) for o in expect_gone if _get(context.kube, o) is not None]
        if not step.still_there or time.monotonic() > deadline:
            return step
        time.sleep(2)


def _get(kube: Kube, obj: Obj) -> Obj | None:
    meta = obj["metadata"]
    return kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))


def _name(obj: Obj) -> str:
    meta = obj["metadata"]
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj['kind']} {where}{meta['name']}"


def _flavors(queue: Obj | None) -> list[str]:
    return [
        f["name"]
        for group in ((queue or {}).get("spec") or {}).get("resourceGroups") or []
        for f in group.get("flavors") or []
    ]


def replace_and_prune(context: SceneContext) -> ReplaceAndPrune:
    deployed = Deployed.require(context.folder)
    kube, env_name = context.kube, context.env.name
    repo = deployed.repo()
    path = repo.checkout / ENV_DIR / f"{env_name}.yaml"
    original = path.read_text(encoding="utf-8")
    merged = load_document(repo.checkout, env_name).value
    tier = context.env.default_training_tier.name
    pool = next(p["name"] for p in merged["pools"] if p.get("role") == "training" and p.get("topology"))
    team = removable_team(merged)
    result = ReplaceAndPrune(tier, pool, team)
    before = kube.get("scheduling.k8s.io/v1", "PriorityClass", tier) or {}
    old_value, old_uid = int(before.get("value", 0)), before.get("metadata", {}).get("uid")
    flavor = {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": pool}}
    topology = {"apiVersion": KUEUE_API, "kind": "Topology", "metadata": {"name": pool}}
    team_queue = {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": team}}
    queues = [
        q["metadata"]["name"]
        for q in kube.list(KUEUE_API, "ClusterQueue")
        if pool in _flavors(q) and q["metadata"]["name"] != team
    ]
    try:
        document = yaml.safe_load(original)
        _edit_tier(document, merged, tier)
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        context.say(f"replace-and-prune: tier {tier} value +1")
        result.steps.append(_sync(context, deployed, f"tier {tier} value +1", []))
        after = kube.get("scheduling.k8s.io/v1", "PriorityClass", tier) or {}
        result.priority = (old_value, int(after.get("value", 0)))
        result.recreated = bool(after) and after["metadata"]["uid"] != old_uid
        workload = kube.get(KUEUE_API, "WorkloadPriorityClass", tier) or {}
        result.workload_priority = int(workload.get("value", 0))
        path.write_text(
            yaml.safe_dump(_rename_and_remove(load_document(repo.checkout, env_name).value, pool, team)),
            encoding="utf-8",
        )
        context.say(f"replace-and-prune: pool {pool} renamed {pool}-v2, team {team} removed")
        change = f"pool {pool} renamed {pool}-v2, team {team} removed"
        result.steps.append(_sync(context, deployed, change, [flavor, topology, team_queue]))
        result.queue_flavors = {q: _flavors(kube.get(KUEUE_API, "ClusterQueue", q)) for q in queues}
        result.queues_active = all(is_true(kube.get(KUEUE_API, "ClusterQueue", q), "Active") for q in queues)
    finally:
        context.say("replace-and-prune: the original spec lands again")
        path.write_text(original, encoding="utf-8")
        renamed = [{**o, "metadata": {"name": f"{pool}-v2"}} for o in (flavor, topology)]
        result.steps.append(_sync(context, deployed, "original spec restored", renamed))
        restored = kube.get("scheduling.k8s.io/v1", "PriorityClass", tier) or {}
        result.restored_priority = int(restored.get("value", 0))
    return result
