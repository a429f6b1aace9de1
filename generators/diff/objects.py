"""Rendered objects of both sides, keyed by what identifies them on a cluster.

The key is (environment, API group, kind, namespace, name): a version bump of an API
(v1beta1 -> v1beta2) or a move to another component folder is a change of the same object,
not a removal plus an addition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import yaml

from generators.k8s.objects import Obj
from generators.layout import RENDERED, is_installer_input
from generators.pipeline.render import RenderedFile
from generators.speedups.parsereuse import held as known_object


class RenderedTreeError(Exception):
    """A committed rendered file that is not a Kubernetes object we can compare."""


@dataclass(frozen=True, order=True)
class ObjectKey:
    env: str
    group: str  # "" for the core API group
    kind: str
    namespace: str  # "" for cluster-scoped objects
    name: str

    def show(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind}{'.' + self.group if self.group else ''} {where}"


@dataclass(frozen=True)
class ObjectRecord:
    key: ObjectKey
    path: str  # repository-relative: rendered/<env>/...
    obj: Obj


# An installer input (rendered/<env>/installers/<file>, e.g. the Kueue chart's values) is no
# Kubernetes object, but a change to it changes the cluster once the installer runs: it is
# compared like one, keyed by its file name under this pseudo-kind.
INSTALLER_INPUT = "InstallerInput"


def key_of_file(env: str, path: str, obj: Obj) -> ObjectKey:
    """The key of what rendered/<env>/<path> holds (path relative to rendered/<env>/)."""
    if is_installer_input(path):
        return ObjectKey(env, "", INSTALLER_INPUT, "", path.split("/", 1)[1])
    return key_of(env, obj)


def key_of(env: str, obj: Obj) -> ObjectKey:
    api_version = str(obj.get("apiVersion", ""))
    meta = obj.get("metadata") or {}
    group = api_version.rpartition("/")[0]  # "" for the core group's bare "v1"
    return ObjectKey(
        env, group, str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", ""))
    )


def from_files(
    files: dict[str, bytes], known: Mapping[str, tuple[bytes, Obj]] | None = None
) -> dict[ObjectKey, ObjectRecord]:
    """Committed files rendered/<env>/**.yaml -> records. Other files are not objects.

    `known` maps a path to (bytes, object) of today's rendering: a committed file with the
    same bytes holds that object (the emitter's round trip is tested) and is not parsed."""
    records: dict[ObjectKey, ObjectRecord] = {}
    for path in sorted(files):
        parts = path.split("/")
        if len(parts) < 3 or parts[0] != RENDERED or not path.endswith((".yaml", ".yml")):
            continue
        inner = "/".join(parts[2:])  # relative to rendered/<env>/
        held = known_object(known, path, files[path])
        if held is not None:
            _add(records, ObjectRecord(key_of_file(parts[1], inner, held), path, held))
            continue
        try:
            documents = list(yaml.load_all(files[path], Loader=yaml.CSafeLoader))
        except yaml.YAMLError as exc:
            raise RenderedTreeError(f"{path}: not YAML at the base ref ({exc.__class__.__name__})") from None
        for obj in documents:
            if obj is None:
                continue
            if not isinstance(obj, dict):
                raise RenderedTreeError(f"{path}: not a Kubernetes object at the base ref")
            _add(records, ObjectRecord(key_of_file(parts[1], inner, obj), path, obj))
    return records


def from_rendering(env: str, files: list[RenderedFile]) -> dict[ObjectKey, ObjectRecord]:
    """The in-memory rendering of one environment (what `render` would write)."""
    records: dict[ObjectKey, ObjectRecord] = {}
    for f in files:
        _add(records, ObjectRecord(key_of_file(env, f.path, f.obj), f"{RENDERED}/{env}/{f.path}", f.obj))
    return records


def _add(records: dict[ObjectKey, ObjectRecord], record: ObjectRecord) -> None:
    if record.key in records:
        raise RenderedTreeError(f"{record.path}: same object as {records[record.key].path}")
    records[record.key] = record
