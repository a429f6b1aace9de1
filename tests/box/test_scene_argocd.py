"""The Argo CD scenes on one `box up staging --argocd --speed 30` (docs/controlplane.md, "Argo
CD in the box (`box up ENV --argocd`)"; docs/gitops.md, "On the box: what the real Argo CD
did").

One module for every scene about deploying with the real Argo CD v3.5.1, so they share one
box: bringing a box up with Argo CD costs 80 to 110 s (the first sync is part of `box up`),
and CI's budget is tight. Each scene leaves the box as it found it (or changes nothing), and the
scenes run in the order written here, first-sync first, since it reads the first sync's own
report, replace-and-prune last (it restores the spec it changes). `--speed 30` as in
the day-in-the-life module: no-drift runs that scene's controllers.

Expected values are the spec's and Argo CD's documented vocabulary (sync Synced, health
Healthy, operation Succeeded), and the sync waves rendered/staging/ carries.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.support import ROOT
from tests.support.box import SceneRun, UpBox, run_scene

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

BOX_ENV = "staging"  # a box of its own (tests/box/conftest.py), deployed by Argo CD
BOX_SPEED = 30
BOX_ARGOCD = True
SCENE_SECONDS = 600


def rendered_waves(env: str) -> set[int]:
    """The sync waves of what the environment Application applies (rendered/<env>/ but
    argocd/ and installers/, as its directory.exclude says)."""
    waves = set()
    base = ROOT / "rendered" / env
    for path in base.rglob("*.yaml"):
        if path.relative_to(base).parts[0] in ("argocd", "installers"):
            continue
        annotations = (yaml.safe_load(path.read_text(encoding="utf-8"))["metadata"].get("annotations")) or {}
        waves.add(int(annotations.get("argocd.argoproj.io/sync-wave", "0")))
    return waves


@pytest.fixture(scope="module")
def first_sync(box: UpBox) -> SceneRun:
    return run_scene(box, "first-sync", SCENE_SECONDS)


def test_first_sync_ends_synced_and_healthy_without_a_failed_operation(first_sync: SceneRun) -> None:
    out = first_sync.done.stdout
    assert first_sync.done.returncode == 0, out + first_sync.done.stderr[-4000:]
    lines = out.splitlines()
    assert lines[-1] == "OK"
    assert lines[0].startswith(
        "application argocd/trainyard-staging: sync Synced, health Healthy; "
        "first operation Succeeded, 0 retries: "
    ), lines[0]
    assert not [line for line in lines if line.startswith(("FAILED OPERATION", "LINGERED", "OUT OF ORDER"))]


def test_first_sync_applied_every_rendered_wave_in_order(first_sync: SceneRun) -> None:
    waves = [
        int(match.group(1))
        for line in first_sync.done.stdout.splitlines()
        if (match := re.match(r"wave (-?\d+): \d+ objects created", line))
    ]
    assert waves == sorted(rendered_waves("staging")), first_sync.done.stdout


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
    out = no_drift.done.stdout
    assert no_drift.done.returncode == 0, out + no_drift.done.stderr[-4000:]
    lines = out.splitlines()
    assert lines[-1] == "OK"
    refreshes = [line for line in lines if line.startswith("refresh +")]
    assert len(refreshes) >= 3, out
    assert all(line.endswith(": Synced") for line in refreshes), refreshes
    history = next(line for line in lines if line.startswith("sync history "))
    before, after = re.match(r"sync history (\d+) -> (\d+) entries", history).groups()  # type: ignore[union-attr]
    assert before == after, history  # selfHeal never started a sync


@pytest.fixture(scope="module")
def pull_request(box: UpBox, no_drift: SceneRun) -> SceneRun:
    return run_scene(box, "pull-request", SCENE_SECONDS)


def test_pull_request_kueue_reports_the_quotas_generate_py_diff_printed(pull_request: SceneRun) -> None:
    out = pull_request.done.stdout
    assert pull_request.done.returncode == 0, out + pull_request.done.stderr[-4000:]
    lines = out.splitlines()
    assert lines[-1] == "OK"
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
    """The tier change, the pool rename with a team removed, and the original spec again,
    each a commit Argo CD syncs: every object rendered no more is reported Pruned by one of
    the operations the change started, after every object those applied (PruneLast), and is
    gone from the cluster; the box ends as it began."""
    out = replace_and_prune.done.stdout
    assert replace_and_prune.done.returncode == 0, out + replace_and_prune.done.stderr[-4000:]
    lines = out.splitlines()
    assert lines[-1] == "OK"
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
    first = next(line for line in lines if line.startswith("sync 2 operation 1: "))
    assert re.search(r": Succeeded, 0 retries, [1-9]\d* applied, then [1-9]\d* pruned: ", first), first
    pruned = {line.removeprefix("sync 2 pruned: ") for line in lines if line.startswith("sync 2 pruned: ")}
    assert {
        "kueue.x-k8s.io/ResourceFlavor train-h100",
        "kueue.x-k8s.io/Topology train-h100",
        "kueue.x-k8s.io/ClusterQueue evals",
        "kueue.x-k8s.io/LocalQueue evals/evals",
        "core/Namespace evals",
    } <= pruned, out
    restored = {line.removeprefix("sync 3 pruned: ") for line in lines if line.startswith("sync 3 pruned: ")}
    assert restored == {
        "kueue.x-k8s.io/ResourceFlavor train-h100-v2",
        "kueue.x-k8s.io/Topology train-h100-v2",
    }
    broken = ("NOT PRUNED", "PRUNED WHILE RENDERED", "PRUNED EARLY", "STILL THERE", "NOTE")
    assert not [line for line in lines if line.startswith(broken)], out
    assert "restored: PriorityClass training 900000" in lines
