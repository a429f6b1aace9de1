"""What the tests apply: the pinned CRDs and an environment's rendered objects, in order."""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Sequence
from pathlib import Path

import yaml
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import NotFoundError

from box import memo
from box.kube import Kube, Obj, purge_namespaces, wait_for
from generators.gitops import syncoptions
from generators.model.load import load
from generators.pipeline.render import RenderedFile, render_tree
from generators.pipeline.render import objects as objects_of
from generators.validation.pinned_crds import resolve_crd_dir

REPO_ROOT = Path(__file__).resolve().parents[1]
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
CRD_ESTABLISHED_SECONDS = 60
RECREATE_SECONDS = 60  # a forced replace waits for the delete (finalizers) before creating

# Namespaces rendered objects live in that another project's installer creates, not ours.
EXTERNAL_NAMESPACES = {
    "kueue-system": "created by Kueue's own install (the chart or manifests own kueue-manager-config there)",
    "argocd": "created by Argo CD's own install (AppProjects and Applications live there)",
    "monitoring": "created by the Prometheus/Grafana operators' install (rules, dashboards; "
    "or the namespace of monitoring.namespace, found by its PrometheusRules)",
    "gpu-operator": "created by the NVIDIA GPU operator's install (dcgm-exporter metrics config)",
}


@functools.cache
def _crd_documents(crd_root: Path) -> tuple[Obj, ...]:
    paths = sorted(crd_root.rglob("*.yaml"))

    def parse() -> list[Obj]:
        documents: list[Obj] = []
        for path in paths:
            # libyaml's loader: the pure-Python one needs ~15 s for these few MB of CRDs.
            for document in yaml.load_all(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader):
                if document and document.get("kind") == "CustomResourceDefinition":
                    documents.append(document)
        return documents

    # Parsed once per set of file bytes, not once per process (box/memo.py).
    return tuple(memo.memo("crds", memo.file_parts(paths), parse))


def crd_documents(crd_root: Path | None = None) -> list[Obj]:
    """Every CustomResourceDefinition under `crd_root` (default: the pinned CRDs of
    schemas/crds.lock, resolve_crd_dir()), sorted by file path (fresh copies)."""
    return copy.deepcopy(list(_crd_documents(crd_root or resolve_crd_dir())))


def install_crds(kube: Kube, crds: list[Obj] | None = None) -> list[str]:
    """Server-side apply `crds` (default: every pinned CRD, crd_documents()) and wait until
    each is Established and its kind discoverable; returns their names.

    Waited for in discovery (/apis/GROUP/VERSION lists the CRD's plural for every served
    version), which the apiserver's discovery controller fills only with Established CRDs
    (k8s.io/apiextensions-apiserver v0.36.5, pkg/apiserver/customresource_discovery_controller.go:105):
    one small document per group version instead of a GET of each CRD, a few hundred KB the
    apiserver encodes again (about 0.3 s each on the busy 2 cores)."""
    names = []
    wanted: dict[str, set[str]] = {}  # group/version -> plurals to be served there
    for crd in crd_documents() if crds is None else crds:
        kube.apply(crd)
        names.append(crd["metadata"]["name"])
        spec = crd["spec"]
        for version in spec["versions"]:
            if version.get("served", True):
                wanted.setdefault(f"{spec['group']}/{version['name']}", set()).add(spec["names"]["plural"])
    missing: list[str] = []

    def all_served() -> bool:
        missing[:] = [
            f"{group_version} {sorted(plurals - _served(kube, group_version))}"
            for group_version, plurals in sorted(wanted.items())
            if not plurals <= _served(kube, group_version)
        ]
        return not missing

    try:
        wait_for(all_served, CRD_ESTABLISHED_SECONDS, f"{len(names)} CRDs Established and discoverable")
    except AssertionError as err:  # which kinds are not served
        raise AssertionError(f"{err}; not served: {'; '.join(missing)}") from None
    kube.dynamic.resources.invalidate_cache()  # the new kinds must be discoverable now
    return names


def _served(kube: Kube, group_version: str) -> set[str]:
    """The resources discovery lists for `group_version` (none while it is not served)."""
    try:
        return {r["name"] for r in kube.raw_get(f"/apis/{group_version}").get("resources") or []}
    except ApiException as err:
        if err.status == 404:  # the group version is not served yet
            return set()
        raise


def environment_files(root: Path, name: str) -> list[RenderedFile]:
    """Every file `generate.py render` writes for environment `name` of the repo at `root`,
    installer inputs (rendered/<env>/installers/, not applied by Argo CD) included."""
    return render_tree(load(root, name))


def environment_objects(root: Path, name: str) -> list[Obj]:
    """The Kubernetes objects `generate.py render` writes for environment `name` of the repo
    at `root`: what Argo CD applies (installer inputs are not objects)."""
    return [copy.deepcopy(obj) for obj in objects_of(environment_files(root, name))]


def wave_key(obj: Obj) -> tuple[int, int, str, str, str]:
    """Argo CD's order: sync wave, then namespaces before anything else in the wave."""
    annotations = obj["metadata"].get("annotations") or {}
    wave = int(annotations.get(SYNC_WAVE, "0"))
    meta = obj["metadata"]
    return (
        wave,
        0 if obj["kind"] == "Namespace" else 1,
        obj["kind"],
        meta.get("namespace", ""),
        meta["name"],
    )


def in_sync_wave_order(objects: list[Obj]) -> list[Obj]:
    return sorted(objects, key=wave_key)


def identity(obj: Obj) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


def foreign_namespaces(objects: list[Obj]) -> set[str]:
    """Namespaces objects are placed in that the environment itself does not render."""
    rendered = {obj["metadata"]["name"] for obj in objects if obj["kind"] == "Namespace"}
    used = {obj["metadata"]["namespace"] for obj in objects if obj["metadata"].get("namespace")}
    return used - rendered


def ensure_external_namespaces(kube: Kube, objects: list[Obj]) -> list[str]:
    """Create the namespaces other installers own (EXTERNAL_NAMESPACES) that objects need.

    Any other missing namespace is a rendering bug and is left for the apply to report.
    """
    # The stack's namespace is the spec's monitoring.namespace ("monitoring" by default, a
    # team's own elsewhere, e.g. observability): where the rendered PrometheusRules go.
    stack = {o["metadata"]["namespace"] for o in objects if o["kind"] == "PrometheusRule"}
    created = []
    for name in sorted(foreign_namespaces(objects) & (set(EXTERNAL_NAMESPACES) | stack)):
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        created.append(name)
    return created


def force_replaced(obj: Obj) -> bool:
    """The object asks Argo CD for `kubectl replace --force` (generators/gitops/syncoptions.py)."""
    options = ((obj["metadata"].get("annotations") or {}).get(syncoptions.ANNOTATION) or "").split(",")
    return all(option in options for option in syncoptions.FORCE_REPLACE)


def in_sync(desired: object, live: object) -> bool:
    """Every field `desired` sets has that value live (what ApplyOutOfSyncOnly skips); a
    zero value the API omits (`globalDefault: false`, omitempty) matches its absence."""
    if live is None and desired in (False, 0, "", [], {}):
        return True
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(in_sync(v, live.get(k)) for k, v in desired.items())
    return desired == live


def recreate(kube: Kube, obj: Obj) -> Obj:
    """`kubectl replace --force`: delete, wait until it is gone, create."""
    meta = obj["metadata"]
    kube.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
    wait_for(lambda: _gone(kube, obj), RECREATE_SECONDS, f"{obj['kind']} {meta['name']} deleted")
    return kube.apply(obj)


def apply_all(kube: Kube, objects: list[Obj]) -> dict[tuple[str, str, str, str], Obj]:
    """Argo CD's sync: in sync-wave order, server-side apply, except that an out-of-sync
    object carrying Force=true,Replace=true is deleted and recreated, as Argo CD does; the
    first refusal stops the sync (no later object is applied). Returns what the server
    stored, by identity."""
    stored = {}
    for obj in in_sync_wave_order(objects):
        try:
            live = (
                kube.get(
                    obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace")
                )
                if force_replaced(obj)
                else None
            )
            replace = live is not None and not in_sync(obj, live)
            stored[identity(obj)] = recreate(kube, obj) if replace else kube.apply(obj)
        except Exception as err:
            reason = err.summary() if hasattr(err, "summary") else str(err)  # the API's own message
            raise AssertionError(f"server-side apply refused {'/'.join(identity(obj))}: {reason}") from err
    return stored


def prune(kube: Kube, objects: list[Obj]) -> list[str]:
    """Argo CD's prune after every wave (PruneLast): delete in reverse sync-wave order, leaving
    finalizers to the controllers that own them (Kueue's resource-in-use), and wait until
    each object is gone. Returns what was pruned."""
    pruned = []
    for obj in reversed(in_sync_wave_order(objects)):
        meta = obj["metadata"]
        with contextlib.suppress(NotFoundError):
            kube.dynamic.delete(
                kube.resource(obj["apiVersion"], obj["kind"]),
                name=meta["name"],
                namespace=meta.get("namespace"),
            )
            pruned.append(f"{obj['kind']} {meta['name']}")
    for obj in objects:
        wait_for(
            functools.partial(_gone, kube, obj),
            RECREATE_SECONDS,
            f"{obj['kind']} {obj['metadata']['name']} pruned (its finalizers lifted)",
        )
    return pruned


def _gone(kube: Kube, obj: Obj) -> bool:
    meta = obj["metadata"]
    return kube.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")) is None


def remove_all(kube: Kube, objects: list[Obj], extra_namespaces: Sequence[str] = ()) -> None:
    """Delete what `objects` created, in reverse sync-wave order (Argo CD's prune order)."""
    namespaces = [obj["metadata"]["name"] for obj in objects if obj["kind"] == "Namespace"]
    purged = {*namespaces, *extra_namespaces}
    for obj in reversed(in_sync_wave_order(objects)):
        meta = obj["metadata"]
        # Cluster-scoped objects, and objects in a namespace that stays (e.g. kube-system).
        if obj["kind"] != "Namespace" and meta.get("namespace") not in purged:
            kube.delete(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
    purge_namespaces(kube, [*namespaces, *extra_namespaces])
