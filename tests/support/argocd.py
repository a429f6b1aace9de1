"""What the Argo CD scene tests read from a scene's output, one home for the staging box's
scenes (tests/box/test_scene_argocd.py) and prod's first sync at `--scale 8`
(tests/box/test_box_scaled.py): the waves an environment Application applies, and the
first-sync scene's promises."""

from __future__ import annotations

import re

import yaml

from tests.support import ROOT
from tests.support.box import SceneRun


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


def passed(run: SceneRun) -> tuple[str, list[str]]:
    """A scene's output and its lines, once it exited 0 and its last line is OK."""
    out = run.done.stdout
    assert run.done.returncode == 0, out + run.done.stderr[-4000:]
    lines = out.splitlines()
    assert lines[-1] == "OK", out
    return out, lines


def first_sync_held(run: SceneRun, application: str, waves: set[int]) -> None:
    """The first-sync scene's promises, from its output: Synced and Healthy, the first
    operation Succeeded without a retry, nothing failed, lingered or out of order, and every
    wave of `waves` created, in order."""
    out, lines = passed(run)
    assert lines[0].startswith(
        f"application {application}: sync Synced, health Healthy; first operation Succeeded, 0 retries: "
    ), lines[0]
    assert not [line for line in lines if line.startswith(("FAILED OPERATION", "LINGERED", "OUT OF ORDER"))]
    created = [
        int(m.group(1)) for line in lines if (m := re.match(r"wave (-?\d+): \d+ objects created", line))
    ]
    assert created == sorted(waves), out
