"""Scene replace-and-prune: the changes docs/immutable-fields.md says need a recreate or a
rename, each landed as a merged pull request, with the real Argo CD doing the sync.

On the box's repository (box/argocd_repo.py), two commits, each pushed and refreshed as a
merged pull request lands (box/scenes/pull_request.py `land`):
1. the change: the default training tier's value goes up by one, so its PriorityClass
   (`value` immutable, rendered with `Force=true,Replace=true`) must be deleted and recreated
   by Argo CD (a new uid, the new value) and its WorkloadPriorityClass updated in place; the
   first training pool is renamed `<pool>-v2` with hostname-only levels (the documented
   migration for a Topology `levels` change); and a team is removed (`removable_team`, its
   shares given to a team sharing the same pool). Argo CD creates the new ResourceFlavor and
   Topology, moves the ClusterQueues to them, and prunes the old flavor, the old topology
   and the removed team's objects last (`PruneLast=true`), once Kueue lifts its
   `resource-in-use` finalizers;
2. the original spec lands the same way (the tier back, recreating the PriorityClass again,
   the pool renamed back, the team back), so the box is left as it was.
One commit carries the three changes rather than one each: every sync costs the CI budget
(Argo CD waits 2 s between waves, controller/sync.go:610-622), and each change is still
read back on its own objects.
It reads back only what Argo CD and the cluster report: every operation a change started
(a watch of the Application, box/argocd.py watch_operations: phase, retries, each object's
result in Argo CD's order), the live objects (uid, value, which flavors each ClusterQueue
names, Active) and whether what is rendered no more is gone. Every operation counts, not only
the last: with PruneLast the prunes are the operation's last wave, which ends the operation as
soon as the deletes are sent (gitops-engine pkg/sync/sync_context.go:703-712 of v3.5.1), so an
object a finalizer holds (Kueue's resource-in-use, a namespace being emptied) still exists,
the Application reads OutOfSync, and selfHeal starts a sync limited to it
(controller/appcontroller.go:2393-2428), whose results are then all the Application shows.
Exit 1 when a sync does not settle or an operation failed or retried, the PriorityClass was
not recreated, an object rendered no more is not reported Pruned by any operation or is
still there, something still rendered is pruned, or a prune is listed before an object the
same operation applied (PruneLast=true).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from box import argocd
from box.argocd_up import Deployed
from box.kube import Kube, Obj, is_true
from box.nodes import HOSTNAME
from box.scenes.context import SceneContext
from box.scenes.immutable_migration import rename_pool
from box.scenes.pull_request import land
from generators.gitops.sources import applied
from generators.layout import ENV_DIR, RENDERED
from generators.spec.load import load_document

KUEUE_API = "kueue.x-k8s.io/v1beta2"
GONE_SECONDS = 180  # Kueue lifting a finalizer, then the garbage collector
STEP_SECONDS = 240  # one sync of a few objects; a stall is reported with Argo CD's message


@dataclass
class Step:
    change: str
    commit: str = ""
    seconds: float = 0.0
    operations: list[argocd.Operation] = field(default_factory=list)  # every one the change started
    expected: list[str] = field(default_factory=list)  # rendered before the change, not after
    pruned: list[str] = field(default_factory=list)  # reported Pruned by any of its operations
    still_there: list[str] = field(default_factory=list)  # should be gone, is not
    notes: list[str] = field(default_factory=list)

    @property
    def missed(self) -> list[str]:
        """Rendered no more, and no operation reports it Pruned."""
        return [name for name in self.expected if name not in self.pruned]

    @property
    def unexpected(self) -> list[str]:
        """Reported Pruned although still rendered."""
        return [name for name in self.pruned if name not in self.expected]

    @property
    def early(self) -> list[str]:
        """Prunes Argo CD ran before an object it applied (PruneLast=true promises none)."""
        return [line for operation in self.operations for line in operation.pruned_before_applied()]

    @property
    def ok(self) -> bool:
        return (
            bool(self.operations)
            and all(o.phase == "Succeeded" and o.retries == 0 for o in self.operations)
            and not self.missed
            and not self.unexpected
            and not self.early
            and not self.still_there
            and not self.notes
        )

    def lines(self, number: int) -> list[str]:
        head = f"sync {number}: {self.change}: {self.commit[:12]} synced after {self.seconds:.0f}s"
        return [
            f"{head}, {len(self.operations)} operations, {len(self.pruned)} pruned of {len(self.expected)} "
            "no longer rendered",
            *(f"sync {number} operation {i + 1}: {o.line()}" for i, o in enumerate(self.operations)),
            *(f"sync {number} pruned: {name}" for name in self.pruned),
            *(f"NOT PRUNED: {name}" for name in self.missed),
            *(f"PRUNED WHILE RENDERED: {name}" for name in self.unexpected),
            *(f"PRUNED EARLY: {line}" for line in self.early),
            *(f"STILL THERE: {name}" for name in self.still_there),
            *(f"NOTE: {note}" for note in self.notes),
        ]


@dataclass
class ReplaceAndPrune:
    tier: str
    pool: str
    team: str
    steps: list[Step] = field(default_factory=list)
    priority: tuple[int, int] = (0, 0)  # PriorityClass value before and after the change
    recreated: bool = False  # a new uid after the change
    workload_priority: int = 0  # WorkloadPriorityClass value after the change
    queue_flavors: dict[str, list[str]] = field(default_factory=dict)  # after the change
    queues_active: bool = False
    restored_priority: int = 0
    restored_recreated: bool = False  # a new uid again after the restore
    notes: list[str] = field(default_factory=list)

    @property
    def removed(self) -> set[str]:
        """What the rename and the team's removal must prune, at least (named as Argo CD
        names objects): the old flavor and topology, the team's ClusterQueue and namespace."""
        return {
            f"kueue.x-k8s.io/ResourceFlavor {self.pool}",
            f"kueue.x-k8s.io/Topology {self.pool}",
            f"kueue.x-k8s.io/ClusterQueue {self.team}",
            f"core/Namespace {self.team}",
        }

    @property
    def ok(self) -> bool:
        old, new = self.priority
        return (
            len(self.steps) == 2
            and all(step.ok for step in self.steps)
            and new == old + 1
            and self.recreated
            and self.workload_priority == new
            and bool(self.queue_flavors)
            and all(f"{self.pool}-v2" in f and self.pool not in f for f in self.queue_flavors.values())
            and self.queues_active
            and self.removed <= set(self.steps[0].expected)
            and self.restored_priority == old
            and self.restored_recreated
            and not self.notes
        )

    def lines(self) -> list[str]:
        old, new = self.priority
        return [
            f"tier {self.tier}: PriorityClass {old} -> {new}, recreated (new uid): {self.recreated}; "
            f"WorkloadPriorityClass {self.workload_priority}",
            f"pool {self.pool} -> {self.pool}-v2, team {self.team} removed: ClusterQueues now "
            f"{self.queue_flavors}, Active: {self.queues_active}",
            *(line for i, step in enumerate(self.steps) for line in step.lines(i + 1)),
            f"restored: PriorityClass {self.tier} {self.restored_priority}, recreated (new uid): "
            f"{self.restored_recreated}",
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


def applied_objects(checkout: Path, env_name: str, application: str) -> dict[str, Obj]:
    """Each object the environment Application applies from the checkout's render, named as
    Argo CD names it (box/argocd.py resource_name): its files chosen as Argo CD's repo server
    chooses them (generators/gitops/sources.py), from its source as rendered."""
    files = sorted(p for p in (checkout / RENDERED / env_name).rglob("*") if p.is_file())
    documents = {p.relative_to(checkout).as_posix(): p for p in files if p.suffix in (".yaml", ".yml")}
    source = next(
        doc["spec"]["source"]
        for path in documents.values()
        if (doc := yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("kind") == "Application"
        and doc["metadata"]["name"] == application
    )
    found = {}
    for relative in applied(source, sorted(documents)):
        obj = yaml.safe_load(documents[relative].read_text(encoding="utf-8"))
        group = obj["apiVersion"].rpartition("/")[0]
        meta = obj["metadata"]
        named = {"group": group, "kind": obj["kind"], "name": meta["name"]}
        found[argocd.resource_name({**named, "namespace": meta.get("namespace")})] = obj
    return found


def _sync(context: SceneContext, deployed: Deployed, change: str) -> Step:
    """Land the change in the checkout (box/scenes/pull_request.py land) and read back every
    operation Argo CD ran for it, what they pruned, and whether what is rendered no more is
    gone from the cluster."""
    step = Step(change)
    repo = deployed.repo()
    before = applied_objects(repo.checkout, context.env.name, deployed.application)
    try:
        landed = land(context.kube, deployed, repo, context.env.name, change, STEP_SECONDS)
    except TimeoutError as err:
        step.notes.append(str(err))
        return step
    after = applied_objects(repo.checkout, context.env.name, deployed.application)
    step.commit, step.seconds, step.operations = landed.commit, landed.seconds, landed.watched.operations
    if landed.watched.restarts:
        step.notes.append(f"the watch of the Application restarted {landed.watched.restarts} times")
    step.expected = [name for name in before if name not in after]
    step.pruned = list(dict.fromkeys(n for o in step.operations for n in o.with_status("Pruned")))
    gone = [before[name] for name in step.expected]
    deadline = time.monotonic() + GONE_SECONDS
    while True:
        step.still_there = [_name(o) for o in gone if _get(context.kube, o) is not None]
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
    queues = [
        q["metadata"]["name"]
        for q in kube.list(KUEUE_API, "ClusterQueue")
        if pool in _flavors(q) and q["metadata"]["name"] != team
    ]
    change = f"tier {tier} value +1, pool {pool} renamed {pool}-v2, team {team} removed"
    after: Obj = {}
    try:
        document = _rename_and_remove(merged, pool, team)
        _edit_tier(document, merged, tier)
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        context.say(f"replace-and-prune: {change}")
        result.steps.append(_sync(context, deployed, change))
        after = kube.get("scheduling.k8s.io/v1", "PriorityClass", tier) or {}
        result.priority = (old_value, int(after.get("value", 0)))
        result.recreated = bool(after) and after["metadata"]["uid"] != old_uid
        workload = kube.get(KUEUE_API, "WorkloadPriorityClass", tier) or {}
        result.workload_priority = int(workload.get("value", 0))
        result.queue_flavors = {q: _flavors(kube.get(KUEUE_API, "ClusterQueue", q)) for q in queues}
        result.queues_active = all(is_true(kube.get(KUEUE_API, "ClusterQueue", q), "Active") for q in queues)
    finally:
        context.say("replace-and-prune: the original spec lands again")
        path.write_text(original, encoding="utf-8")
        result.steps.append(_sync(context, deployed, "original spec restored"))
        restored = kube.get("scheduling.k8s.io/v1", "PriorityClass", tier) or {}
        result.restored_priority = int(restored.get("value", 0))
        uids = (old_uid, after.get("metadata", {}).get("uid"))
        result.restored_recreated = bool(restored) and restored["metadata"]["uid"] not in uids
    return result
