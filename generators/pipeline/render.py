"""Environment -> files under rendered/<env>/, written atomically; and the staleness check.

Paths: rendered/<env>/<component>/[<namespace>/]<kind>-<name>.yaml, one object per file;
and rendered/<env>/installers/<file>: inputs for another project's installer (a component's
`installer_inputs(env)`, e.g. the Kueue chart's values), which are not Kubernetes objects:
no labels, no sync wave, never applied by Argo CD (layout.INSTALLERS).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generators.components.registry import COMPONENTS
from generators.errors import SpecError
from generators.gitops import health, permissions, syncoptions
from generators.gitops.syncwaves import wave
from generators.k8s.objects import Obj
from generators.layout import INSTALLERS, RENDERED, is_installer_input
from generators.model.environment import Environment
from generators.output import yamlemit

STAGING = ".tmp-"  # rendered/.tmp-<env>-*: a tree being written
MANAGED_BY = "trainyard"


@dataclass(frozen=True)
class RenderedFile:
    path: str  # relative to rendered/<env>/
    obj: Obj  # the Kubernetes object; for an installer input, its document
    text: str

    @property
    def is_object(self) -> bool:
        """False for an installer input (rendered/<env>/installers/): not for a cluster."""
        return not is_installer_input(self.path)


def objects(files: Sequence[RenderedFile]) -> list[Obj]:
    """The Kubernetes objects among rendered files (what Argo CD applies)."""
    return [f.obj for f in files if f.is_object]


def _decorate(obj: Obj, env: Environment, component: str) -> Obj:
    """Common labels, the sync-wave annotation and (generators/gitops/health.py) the
    ignore-healthcheck one, added in one place for every object."""
    meta: dict[str, Any] = obj.setdefault("metadata", {})
    meta["labels"] = {
        "app.kubernetes.io/managed-by": MANAGED_BY,
        "trainyard.dev/environment": env.name,
        "trainyard.dev/component": component,
        **meta.get("labels", {}),
    }
    annotations = meta.get("annotations", {})
    annotations.setdefault("argocd.argoproj.io/sync-wave", str(wave(obj["kind"])))
    meta["annotations"] = annotations
    health.mark(obj)
    return obj


def file_path(component: str, obj: Obj) -> str:
    meta = obj["metadata"]
    name = f"{obj['kind'].lower()}-{meta['name']}.yaml"
    namespace = meta.get("namespace")
    return f"{component}/{namespace}/{name}" if namespace else f"{component}/{name}"


def render_environment(env: Environment) -> list[RenderedFile]:
    """The object files of rendered/<env>/ (what Argo CD applies), sorted by path."""
    return [f for f in render_tree(env) if f.is_object]


def render_tree(env: Environment) -> list[RenderedFile]:
    """Every file of rendered/<env>/, installer inputs included, sorted by path: what
    `render` writes, `render --check` and `validate` compare and `diff` shows."""
    files: dict[str, RenderedFile] = {}
    for component in COMPONENTS:
        earlier = [f.obj for f in files.values()]  # objects only: inputs come after
        for obj in component.generate(env, earlier):
            obj = _decorate(obj, env, component.name)
            for option in syncoptions.recreate_options(obj):
                syncoptions.add(obj, option)
            path = file_path(component.name, obj)
            if path in files:
                raise ValueError(f"two objects render to {RENDERED}/{env.name}/{path}")
            text = yamlemit.dump(obj)
            if syncoptions.needs_server_side_apply(text):
                syncoptions.add(obj, syncoptions.SERVER_SIDE_APPLY)
                text = yamlemit.dump(obj)
            files[path] = RenderedFile(path, obj, text)
    for component in COMPONENTS:
        for name, (header, document) in component.installer_inputs(env).items():
            path = f"{INSTALLERS}/{name}"
            if path in files:
                raise ValueError(f"two installer inputs render to {RENDERED}/{env.name}/{path}")
            comment = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
            files[path] = RenderedFile(path, document, comment + yamlemit.dump(document))
    # What Argo CD would refuse stops the render here, before anything is written.
    refused = permissions.refusals(env.name, [permissions.File(p, f.obj) for p, f in files.items()])
    if refused:
        raise SpecError(refused)
    return [files[p] for p in sorted(files)]


def stage(root: Path, env_name: str, files: Sequence[RenderedFile]) -> Path:
    """rendered/.tmp-<env>-*/ holding the files; swap() puts it in place, or delete it."""
    base = root / RENDERED
    base.mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{STAGING}{env_name}-", dir=base))
    try:
        for folder in sorted({(tmp / f.path).parent for f in files}):  # once each, not per file
            folder.mkdir(parents=True, exist_ok=True)
        for f in files:
            (tmp / f.path).write_text(f.text, encoding="utf-8")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def swap(root: Path, env_name: str, staged: Path) -> None:
    base = root / RENDERED
    final = base / env_name
    old = base / f".old-{env_name}-{os.getpid()}"
    if final.exists():
        final.rename(old)
    staged.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def discard_staged(root: Path, env_names: Sequence[str], *, remove_empty_base: bool = False) -> None:
    """Remove staged trees of these environments that were never swapped in (a failure)."""
    base = root / RENDERED
    for name in env_names:
        for leftover in base.glob(f"{STAGING}{name}-*"):
            shutil.rmtree(leftover, ignore_errors=True)
    if remove_empty_base and base.is_dir() and not any(base.iterdir()):
        base.rmdir()


def remove_unknown(root: Path, keep: set[str]) -> list[str]:
    """Delete rendered/<dir> for environments that no longer exist; returns what went."""
    base = root / RENDERED
    gone = []
    if base.is_dir():
        for child in sorted(base.iterdir()):
            if child.is_dir() and child.name not in keep:
                shutil.rmtree(child)
                gone.append(f"{RENDERED}/{child.name}/")
    return gone


def stale(root: Path, env_name: str, files: Sequence[RenderedFile]) -> list[str]:
    """Lines `rendered/<env>/<path>: stale|missing|extra`, sorted; empty when up to date."""
    base = root / RENDERED / env_name
    want = {f.path: f.text for f in files}
    have: set[str] = set()
    if base.is_dir():
        have = {p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file()}
    out = []
    for path in sorted(set(want) | have):
        shown = f"{RENDERED}/{env_name}/{path}"
        if path not in have:
            out.append(f"{shown}: missing")
        elif path not in want:
            out.append(f"{shown}: extra")
        elif (base / path).read_text(encoding="utf-8") != want[path]:
            out.append(f"{shown}: stale")
    return out
