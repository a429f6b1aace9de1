"""Scene pull-request: a change of team shares lands the way a merged pull request does, and
the real Argo CD brings Kueue to exactly the quotas `generate.py diff` printed for it.

On the box's repository (box/argocd_repo.py, a work tree whose commits are pushed to the
bare repository Argo CD reads), the scene:
1. moves 10 points of share on one flavor from one team to another in
   environments/<env>.yaml (the first flavor two teams share; the second team gives);
2. runs `generate.py -C <checkout> diff --base HEAD --format json`, the reviewer's view of
   the pull request, and keeps its quota summary: per team, flavor and resource, the
   nominalQuota after the change;
3. renders, commits on the target branch and pushes (the merge), then asks Argo CD to
   refresh (the annotation `argocd.argoproj.io/refresh: normal`, what a git webhook or
   `argocd app get --refresh` does);
4. waits until Argo CD reports the Application Synced and Healthy at that commit with its
   operation Succeeded, and reads every changed team's ClusterQueue from the cluster: its
   nominalQuota must equal the diff's number for every cell;
5. reverts the commit the same way, and checks the quotas are back to the diff's "before".
Exit 1 when a quota differs, the sync does not settle, or the revert does not.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from box import argocd
from box.argocd_repo import Repo
from box.argocd_up import Deployed
from box.kube import Kube, Obj
from box.scenes.context import SceneContext
from generators.layout import ENV_DIR

KUEUE_API = "kueue.x-k8s.io/v1beta2"
SYNC_SECONDS = 600
SHARE_POINTS = 10
GENERATE = Path(__file__).resolve().parents[2] / "generate.py"

Cell = tuple[str, str, str]  # team (its ClusterQueue), flavor, resource


@dataclass
class PullRequest:
    change: str
    commit: str = ""
    diff_after: dict[Cell, str] = field(default_factory=dict)
    diff_before: dict[Cell, str] = field(default_factory=dict)
    live_after: dict[Cell, str] = field(default_factory=dict)
    live_restored: dict[Cell, str] = field(default_factory=dict)
    synced_seconds: float = 0.0
    restored_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            bool(self.diff_after)
            and any(self.diff_after[c] != self.diff_before[c] for c in self.diff_after)
            and self.live_after == self.diff_after
            and self.live_restored == self.diff_before
            and not self.notes
        )

    def lines(self) -> list[str]:
        out = [f"change: {self.change}; merged as {self.commit[:12]}"]
        for cell in sorted(self.diff_after):
            team, flavor, resource = cell
            out.append(
                f"quota {team} [{flavor}] {resource}: "
                f"diff {self.diff_before[cell]} -> {self.diff_after[cell]}; "
                f"Kueue after sync {self.live_after.get(cell, 'absent')}, "
                f"after revert {self.live_restored.get(cell, 'absent')}"
            )
        out += [
            f"Argo CD Synced and Healthy at the merge after {self.synced_seconds:.0f}s, "
            f"at the revert after {self.restored_seconds:.0f}s",
            *(f"NOTE: {note}" for note in self.notes),
            "OK" if self.ok else "BROKEN",
        ]
        return out


def move_share(document: dict[str, Any]) -> str:
    """Move SHARE_POINTS of share on the first flavor two teams share from the second team
    to the first; returns the change in words."""
    teams = document["teams"]
    for flavor in (f for team in teams for f in (team.get("shares") or {})):
        holders = [t for t in teams if flavor in (t.get("shares") or {})]
        if len(holders) >= 2 and holders[1]["shares"][flavor] > SHARE_POINTS:
            gain, give = holders[0], holders[1]
            before = (gain["shares"][flavor], give["shares"][flavor])
            gain["shares"][flavor] += SHARE_POINTS
            give["shares"][flavor] -= SHARE_POINTS
            return (
                f"{flavor} share {gain['name']} {before[0]} -> {gain['shares'][flavor]}, "
                f"{give['name']} {before[1]} -> {give['shares'][flavor]}"
            )
    raise RuntimeError("no flavor that two teams share: nothing to move")


def diff_quotas(checkout: Path, env_name: str) -> tuple[dict[Cell, str], dict[Cell, str]]:
    """`generate.py -C checkout diff --base HEAD --format json`: the environment's quota
    summary, nominalQuota before and after, per (team, flavor, resource)."""
    done = subprocess.run(
        [sys.executable, str(GENERATE), "-C", str(checkout), "diff", "--base", "HEAD", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if done.returncode not in (0, 1):  # 1: an immutable-field change (not this one)
        raise RuntimeError(f"generate.py diff failed ({done.returncode}): {done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    env = next(e for e in report["environments"] if e["name"] == env_name)
    before, after = {}, {}
    for quota in env["summary"]["quotas"]:
        cell = (quota["team"], quota["flavor"], quota["resource"])
        before[cell] = quota["nominalQuota"]["before"]
        after[cell] = quota["nominalQuota"]["after"]
    return before, after


def live_quotas(kube: Kube, cells: list[Cell]) -> dict[Cell, str]:
    """nominalQuota of each cell as the cluster holds the team's ClusterQueue."""
    found = {}
    for team, flavor, resource in cells:
        queue = kube.get(KUEUE_API, "ClusterQueue", team)
        for group in (queue or {}).get("spec", {}).get("resourceGroups") or []:
            for entry in group.get("flavors") or []:
                if entry["name"] != flavor:
                    continue
                for quota in entry.get("resources") or []:
                    if quota["name"] == resource:
                        found[(team, flavor, resource)] = str(quota["nominalQuota"])
    return found


@dataclass
class Landed:
    """A change landed: its commit, the seconds from the refresh to Argo CD reporting it
    synced, and every operation Argo CD ran meanwhile (box/argocd.py watch_operations)."""

    commit: str
    seconds: float
    watched: argocd.Watched


def land(
    kube: Kube, deployed: Deployed, repo: Repo, env_name: str, message: str, seconds: float = SYNC_SECONDS
) -> Landed:
    """Render, commit, push, refresh; wait until Argo CD reports the commit synced."""
    repo.render(env_name)
    commit = repo.commit(message)
    began = time.monotonic()
    since = argocd.application(kube, deployed.namespace, deployed.application)
    assert since is not None, f"Application {deployed.namespace}/{deployed.application} is gone"
    refresh(kube, deployed)
    watched = argocd.watch_operations(
        kube, deployed.namespace, deployed.application, since, functools.partial(synced_at, commit), seconds
    )
    return Landed(commit, time.monotonic() - began, watched)


def refresh(kube: Kube, deployed: Deployed) -> None:
    kube.merge_patch(
        argocd.API,
        "Application",
        deployed.application,
        {"metadata": {"annotations": {"argocd.argoproj.io/refresh": "normal"}}},
        deployed.namespace,
    )


def synced_at(commit: str, app: Obj) -> bool:
    """Argo CD reports the Application settled (box/argocd.py) at `commit`: its sync status
    compared at it and its last operation synced it."""
    if not argocd.settled(app):
        return False
    synced = ((app.get("status") or {}).get("sync") or {}).get("revision")
    result = (argocd.operation_state(app).get("syncResult") or {}).get("revision")
    return bool(synced == commit and result == commit)


def pull_request(context: SceneContext) -> PullRequest:
    deployed = Deployed.require(context.folder)
    repo = deployed.repo()
    env_name = context.env.name
    path = repo.checkout / ENV_DIR / f"{env_name}.yaml"
    original = path.read_text(encoding="utf-8")
    document = yaml.safe_load(original)
    change = move_share(document)
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    context.say(f"pull request: {change}")
    before, after = diff_quotas(repo.checkout, env_name)
    result = PullRequest(change, diff_after=after, diff_before=before)
    cells = sorted(after)
    try:
        landed = land(context.kube, deployed, repo, env_name, f"shares: {change}")
        result.commit, result.synced_seconds = landed.commit, landed.seconds
        result.live_after = live_quotas(context.kube, cells)
    except TimeoutError as err:
        result.notes.append(str(err))
    finally:
        context.say("reverting the pull request")
        path.write_text(original, encoding="utf-8")
        try:
            result.restored_seconds = land(
                context.kube, deployed, repo, env_name, f"revert shares: {change}"
            ).seconds
            result.live_restored = live_quotas(context.kube, cells)
        except TimeoutError as err:
            result.notes.append(f"revert: {err}")
    return result
