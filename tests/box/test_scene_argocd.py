"""The Argo CD scenes on one `box up staging --argocd --speed 30` (docs/controlplane.md, "Argo
CD in the box (`box up ENV --argocd`)"; docs/gitops.md, "On the box: what the real Argo CD
did").

One module for every scene about deploying with the real Argo CD v3.5.1, on the staging box
at `--speed 30` that the bad-node, day-in-the-life and fault modules share (they declare
BOX_ARGOCD too; tests/box/conftest.py): bringing a box up with Argo CD costs 75 to 110 s (the
first sync is part of `box up`), and CI's budget is tight, so no module pays for a box of its
own. This module comes first of them (file order; the fault module, BOX_LEAVES, last), and
its scenes run in the order written here, first-sync first, since it reads the first sync's
own report, replace-and-prune last (it restores the spec it changes). Each scene leaves the
box as it found it (or changes nothing), which the shared box checks before the next module.
`--speed 30` as in the day-in-the-life module: no-drift runs that scene's controllers.

Expected values are the spec's and Argo CD's documented vocabulary (sync Synced, health
Healthy, operation Succeeded), and the sync waves rendered/staging/ carries.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from box import argocd
from box.kube import Obj
from generators.gitops import permissions
from tests.support import ROOT
from tests.support.argocd import first_sync_held, passed, rendered_waves
from tests.support.box import SceneRun, UpBox, run_scene

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

BOX_ENV = "staging"  # the shared staging box at speed 30 (tests/box/conftest.py)
BOX_SPEED = 30
BOX_ARGOCD = True
SCENE_SECONDS = 600


@pytest.fixture(scope="module")
def first_sync(box: UpBox) -> SceneRun:
    return run_scene(box, "first-sync", SCENE_SECONDS)


def test_first_sync_ends_synced_and_healthy_in_wave_order_without_a_failed_operation(
    first_sync: SceneRun,
) -> None:
    first_sync_held(first_sync, "argocd/trainyard-staging", rendered_waves("staging"))


def test_the_box_repository_differs_from_rendered_only_in_the_two_urls(box: UpBox) -> None:
    """What Argo CD read is the render of the spec pointed at the box: the same files as
    rendered/staging/ at --scale 4, the repository URL and destination server aside."""
    checkout = box.folder / "argocd" / "repo" / "checkout" / "rendered" / "staging"
    app = yaml.safe_load((checkout / "argocd/argocd/application-trainyard-staging.yaml").read_text())
    assert app["spec"]["source"]["repoURL"] == (box.folder / "argocd" / "repo" / "repo.git").as_uri()
    assert app["spec"]["source"]["targetRevision"] == "main"  # environments/_defaults.yaml
    assert app["spec"]["destination"]["server"].startswith("https://127.0.0.1:")
    ours = {p.relative_to(checkout).as_posix() for p in checkout.rglob("*.yaml")}
    theirs = {
        p.relative_to(ROOT / "rendered/staging").as_posix()
        for p in (ROOT / "rendered/staging").rglob("*.yaml")
    }
    assert ours == theirs
    assert Path(box.folder / "argocd" / "deployed.json").is_file()


@pytest.fixture(scope="module")
def no_drift(box: UpBox, first_sync: SceneRun) -> SceneRun:
    return run_scene(box, "no-drift", SCENE_SECONDS)


def test_no_drift_argo_cd_reports_synced_at_every_refresh_while_controllers_act(no_drift: SceneRun) -> None:
    out, lines = passed(no_drift)
    refreshes = [line for line in lines if line.startswith("refresh +")]
    assert len(refreshes) >= 3, out
    assert all(line.endswith(": Synced") for line in refreshes), refreshes
    # The health controller's quarantine, the whole of it while Argo CD refreshed: staging at
    # speed 30 quarantines after 300 / 30 = 10 s and releases 1800 / 30 = 60 s after the fault.
    health = next(line for line in lines if line.startswith("health controller: "))
    match = re.fullmatch(
        r"health controller: (\S+) quarantined \(gpu-temperature\) at \+(\d+)s, released at \+(\d+)s; "
        r"(\d+) refreshes in between: (.*)",
        health,
    )
    assert match, health
    at, released, between = int(match.group(2)), int(match.group(3)), int(match.group(4))
    assert released - at >= 60 - 1 and between >= 1, health
    assert match.group(5) == ", ".join(["Synced"] * between), health
    history = next(line for line in lines if line.startswith("sync history "))
    before, after = re.match(r"sync history (\d+) -> (\d+) entries", history).groups()  # type: ignore[union-attr]
    assert before == after, history  # selfHeal never started a sync


@pytest.fixture(scope="module")
def pull_request(box: UpBox, no_drift: SceneRun) -> SceneRun:
    return run_scene(box, "pull-request", SCENE_SECONDS)


def test_pull_request_kueue_reports_the_quotas_generate_py_diff_printed(pull_request: SceneRun) -> None:
    out, lines = passed(pull_request)
    assert "change: train-h100 share foundation 50 -> 60, research 30 -> 20; merged as " in out
    # staging: 32 H100 nodes, 1 in reserve: 31 x 8 GPUs shared 60/20 in whole nodes
    # (environments/staging.yaml), as `generate.py diff` printed it for this change.
    assert (
        "quota foundation [train-h100] nvidia.com/gpu: diff 128 -> 152; "
        "Kueue after sync 152, after revert 128"
    ) in lines
    assert (
        "quota research [train-h100] nvidia.com/gpu: diff 72 -> 48; Kueue after sync 48, after revert 72"
    ) in lines


@pytest.fixture(scope="module")
def replace_and_prune(box: UpBox, pull_request: SceneRun) -> SceneRun:
    return run_scene(box, "replace-and-prune", SCENE_SECONDS)


def test_replace_and_prune_recreates_the_priority_class_and_prunes_what_is_rendered_no_more(
    replace_and_prune: SceneRun,
) -> None:
    """The tier change with the pool rename and a team removed, then the original spec again,
    each a commit Argo CD syncs (the PriorityClass recreated each time): every object
    rendered no more is reported Pruned by one of the operations the commit started, after
    every object those applied (PruneLast), and is gone from the cluster; the box ends as it
    began."""
    out, lines = passed(replace_and_prune)
    # environments/_defaults.yaml: the default training tier `training` is 900000.
    assert lines[0] == (
        "tier training: PriorityClass 900000 -> 900001, recreated (new uid): True; "
        "WorkloadPriorityClass 900001"
    )
    # environments/staging.yaml: train-h100 is the first training pool with a topology, and
    # evals the last team whose removal keeps the shares adding up (its train-h100 share
    # goes to foundation); foundation and research keep the renamed pool.
    assert lines[1] == (
        "pool train-h100 -> train-h100-v2, team evals removed: ClusterQueues now "
        "{'foundation': ['train-h100-v2'], 'research': ['train-h100-v2']}, Active: True"
    )
    # The operation the rename started applied the new flavor, topology and queues, then
    # pruned (Argo CD's own order of results).
    first = next(line for line in lines if line.startswith("sync 1 operation 1: "))
    assert re.search(r": Succeeded, 0 retries, [1-9]\d* applied, then [1-9]\d* pruned: ", first), first
    pruned = {line.removeprefix("sync 1 pruned: ") for line in lines if line.startswith("sync 1 pruned: ")}
    assert {
        "kueue.x-k8s.io/ResourceFlavor train-h100",
        "kueue.x-k8s.io/Topology train-h100",
        "kueue.x-k8s.io/ClusterQueue evals",
        "kueue.x-k8s.io/LocalQueue evals/evals",
        "core/Namespace evals",
    } <= pruned, out
    restored = {line.removeprefix("sync 2 pruned: ") for line in lines if line.startswith("sync 2 pruned: ")}
    assert restored == {
        "kueue.x-k8s.io/ResourceFlavor train-h100-v2",
        "kueue.x-k8s.io/Topology train-h100-v2",
    }
    broken = ("NOT PRUNED", "PRUNED WHILE RENDERED", "PRUNED EARLY", "STILL THERE", "NOTE")
    assert not [line for line in lines if line.startswith(broken)], out
    assert "restored: PriorityClass training 900000, recreated (new uid): True" in lines


# ------------------------------------------------------------------ refusals against the real Argo CD
#
# Each render refusal (generators/gitops/permissions.py) checked against what the real Argo CD
# does with the same objects: the Argo CD objects and the render the box's repository holds,
# edited as the refusal needs, given to `permissions.refusals` (what `render` runs) and, as a
# project and an Application of their own (no automated sync, so one sync each), to Argo CD.
# They run last: the Applications compare the environment's objects (Argo CD then warns of
# shared resources) and are deleted at once; the sync is refused before anything is applied.

CHECKOUT = Path("argocd") / "repo" / "checkout" / "rendered" / "staging"
PROJECT = "argocd/argocd/appproject-trainyard-staging.yaml"
APPLICATION = "argocd/argocd/application-trainyard-staging.yaml"


@dataclass
class Refusal:
    render: list[str]  # the render's lines
    argo: argocd.Verdict


@pytest.fixture(scope="module")
def box_render(box: UpBox, replace_and_prune: SceneRun) -> list[permissions.File]:
    """The render the box's repository holds (after replace-and-prune restored it)."""
    base = box.folder / CHECKOUT
    return [
        permissions.File(p.relative_to(base).as_posix(), yaml.safe_load(p.read_text(encoding="utf-8")))
        for p in sorted(base.rglob("*.yaml"))
    ]


def refused(
    box: UpBox, render: list[permissions.File], case: str, edit: Callable[[Obj, Obj], None]
) -> Refusal:
    """The box's render with its AppProject and Application renamed `refusal-<case>`,
    automated sync off, then `edit(project, application)`: what the render says of it, and
    what Argo CD reports when asked to sync it."""
    files = copy.deepcopy(render)
    project = next(f.obj for f in files if f.path == PROJECT)
    app = next(f.obj for f in files if f.path == APPLICATION)
    name = f"refusal-{case}"
    project["metadata"]["name"] = app["metadata"]["name"] = app["spec"]["project"] = name
    del app["spec"]["syncPolicy"]["automated"]
    edit(project, app)
    lines = [problem.message for problem in permissions.refusals("staging", files)]
    return Refusal(lines, argocd.try_sync(box.kube, project, app))


def test_argo_cd_refuses_the_kind_the_render_refuses_and_applies_nothing(
    box: UpBox, box_render: list[permissions.File]
) -> None:
    def without_local_queue(project: Obj, _: Obj) -> None:
        spec = project["spec"]
        spec["namespaceResourceWhitelist"] = [
            i for i in spec["namespaceResourceWhitelist"] if i["kind"] != "LocalQueue"
        ]

    found = refused(box, box_render, "kind", without_local_queue)
    assert found.render == [
        "kueue.x-k8s.io/LocalQueue is not in project refusal-kind's whitelist: Argo CD would not sync it"
    ]
    # controller/sync.go:657-658 of v3.5.1, through gitops-engine's task validation.
    assert found.argo.phase == "Failed", found.argo
    assert found.argo.message == (
        "one or more synchronization tasks are not valid: "
        "resource kueue.x-k8s.io:LocalQueue is not permitted in project refusal-kind"
    )
    assert found.argo.failed() and {r["kind"] for r in found.argo.failed()} == {"LocalQueue"}
    assert found.argo.failed() == found.argo.results  # nothing applied


def test_argo_cd_refuses_the_namespaces_the_render_refuses(
    box: UpBox, box_render: list[permissions.File]
) -> None:
    """The project allows only `kueue-*` and the Application's destination is kueue-system:
    every other namespace an object names is refused, by both, and no cluster-scoped kind."""

    def only_kueue_namespaces(project: Obj, app: Obj) -> None:
        project["spec"]["destinations"] = [{**project["spec"]["destinations"][0], "namespace": "kueue-*"}]
        app["spec"]["destination"]["namespace"] = "kueue-system"

    found = refused(box, box_render, "namespace", only_kueue_namespaces)
    ours = {m.split()[1] for m in found.render if m.endswith("destinations: Argo CD would not sync it")}
    assert len(ours) == len(found.render), found.render  # nothing but namespaces
    assert found.argo.phase == "Failed", found.argo
    theirs = {
        match.group(1)
        for r in found.argo.failed()
        if (
            match := re.fullmatch(
                r"namespace (\S+) is not permitted in project 'refusal-namespace'", r["message"]
            )
        )
    }
    assert len(theirs) == len({r["message"] for r in found.argo.failed()}), found.argo.failed()
    # environments/staging.yaml's team, serving and system namespaces, and kube-system (the
    # adapter's auth-reader RoleBinding); kueue-system matches the glob.
    assert (
        ours
        == theirs
        == {
            "evals",
            "foundation",
            "research",
            "serving-staging",
            "kube-system",
            "monitoring",
            "trainyard-system",
        }
    )


def test_argo_cd_refuses_the_application_destination_the_render_refuses(
    box: UpBox, box_render: list[permissions.File]
) -> None:
    def only_kueue_namespaces(project: Obj, _: Obj) -> None:
        project["spec"]["destinations"] = [{**project["spec"]["destinations"][0], "namespace": "kueue-*"}]

    found = refused(box, box_render, "destination", only_kueue_namespaces)
    server = yaml.safe_load((box.folder / CHECKOUT / APPLICATION).read_text())["spec"]["destination"][
        "server"
    ]
    assert (
        f"Application refusal-destination: destination {server} not permitted in project refusal-destination"
        in found.render
    )
    # util/argo/argo.go:702-715: the Application's own destination, before any object.
    message = (
        f"application destination server '{server}' and namespace '' do not match any of the allowed "
        "destinations in project 'refusal-destination'"
    )
    assert found.argo.phase == "Error" and found.argo.results == [], found.argo
    assert f"InvalidSpecError: {message}" in found.argo.conditions


def test_an_application_path_matching_nothing_argo_cd_fails_to_compare_or_applies_nothing(
    box: UpBox, box_render: list[permissions.File]
) -> None:
    """The render refuses a source that applies no file. Argo CD: a path that does not exist
    fails the comparison; a path whose files are all excluded syncs, applying nothing (with
    automated prune it would delete what the Application applied before)."""

    def misspelled(_: Obj, app: Obj) -> None:
        app["spec"]["source"]["path"] = "rendred/staging"

    def all_excluded(_: Obj, app: Obj) -> None:
        app["spec"]["source"]["directory"]["exclude"] = "*"

    missing = refused(box, box_render, "path", misspelled)
    assert missing.render == [
        "Application refusal-path: source path rendred/staging applies no rendered file, "
        "so Argo CD would apply nothing (and prune what it applied before)"
    ]
    assert missing.argo.phase == "Error", missing.argo
    assert missing.argo.message.endswith("rendred/staging: app path does not exist"), missing.argo
    excluded = refused(box, box_render, "excluded", all_excluded)
    assert excluded.render == [
        "Application refusal-excluded: source path rendered/staging applies no rendered file, "
        "so Argo CD would apply nothing (and prune what it applied before)"
    ]
    assert (excluded.argo.phase, excluded.argo.message) == (
        "Succeeded",
        "successfully synced (no more tasks)",
    )
    assert excluded.argo.results == [] and excluded.argo.compared == 0
