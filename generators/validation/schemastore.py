"""kubeconform's standalone schema layout, built offline from pinned inputs and cached.

kubeconform resolves a local `-schema-location DIR` (one not ending in "json") as
`DIR/v<kubernetes-version>-standalone[-strict]/<kind><kind-suffix>.json` and compiles each
file on its own, so every file must be STANDALONE (no `$ref` to other files). We build:

- Kubernetes kinds from the kubernetes-validate wheel (`v1.N.0-local-strict`), `$ref`s into
  `_definitions.json` inlined; the one recursive definition (JSONSchemaProps, the schema of
  a CRD's openAPIV3Schema) is cut to `{}` where it recurses.
- CRD kinds from each SERVED version's openAPIV3Schema of the pinned CRDs, made strict the
  way the apiserver prunes: closed objects, int-or-string as oneOf, ObjectMeta for metadata.

Files are draft-04 (kubeconform's default draft, the one OpenAPI v3 schemas follow), compact,
without descriptions; a subschema repeated within a file is written once under its local
`definitions` (still standalone: no ref leaves the file). The result is cached outside the repo under
`<cache>/schemas/<key>/`, key = hash of every pinned input, so it is rebuilt only when a pin
changes. See docs/validation-schemas.md.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

# The pinned CRDs live in pinned_crds.py; these names stay importable from here.
from generators.validation.pinned_crds import SOURCES_FILE as SOURCES_FILE
from generators.validation.pinned_crds import CrdPinError as CrdPinError
from generators.validation.pinned_crds import CrdProblem as CrdProblem
from generators.validation.pinned_crds import CrdSource as CrdSource
from generators.validation.pinned_crds import CrdVerificationError as CrdVerificationError
from generators.validation.pinned_crds import crd_files as crd_files
from generators.validation.pinned_crds import fetch_crds as fetch_crds
from generators.validation.pinned_crds import read_sources as read_sources
from generators.validation.pinned_crds import resolve_crd_dir, sha256_file
from generators.validation.pinned_crds import verify_crds as verify_crds
from tools.toolchain import cache_dir

# Bump when the output of this module changes for the same inputs: it is part of the key.
SCHEMA_FORMAT_VERSION: Final = 4
DRAFT4: Final = "http://json-schema.org/draft-04/schema#"
MANIFEST: Final = "manifest.json"
DEDUPLICATE_MIN_BYTES: Final = 1024  # smaller repeats cost less to compile than to look up
_OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_SUBSCHEMA_MAPS: Final = ("properties", "patternProperties", "definitions", "$defs")
_SUBSCHEMA_LISTS: Final = ("allOf", "anyOf", "oneOf")
Schema = dict[str, Any]
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SchemaBuildError(RuntimeError):
    """The pinned inputs cannot be turned into a schema set (bad version, CRD, clash)."""


@dataclass(frozen=True)
class SchemaFile:
    """One file of the layout and the kind it validates."""

    name: str  # <kind><kind-suffix>.json
    api_version: str
    kind: str
    source: str  # where the schema came from, for error messages and the manifest
    schema: Schema


def default_crd_dir() -> Path:
    """The verified directory of the CRDs pinned in schemas/crds.lock: $TRAINYARD_CRDS,
    ../shared/crds or the fetched cache copy (pinned_crds.resolve_crd_dir); CrdsNotFound
    says to run `python generate.py fetch-crds` when there is none."""
    return resolve_crd_dir()


def normalize_kubernetes_version(version: str) -> str:
    """'1.36', 'v1.36.5' -> '1.36.0': kubernetes-validate ships one schema set per minor."""
    return f"1.{_parse_version(version)[0]}.0"


def exact_kubernetes_version(version: str) -> str:
    """'1.36' -> '1.36.0', 'v1.36.5' -> '1.36.5': what kubeconform's -kubernetes-version gets."""
    minor, patch = _parse_version(version)
    return f"1.{minor}.{patch}"


def _parse_version(version: str) -> tuple[int, int]:
    match = re.fullmatch(r"v?1\.(\d+)(?:\.(\d+))?", version.strip())
    if not match:
        raise SchemaBuildError(f"not a Kubernetes version: {version!r} (expected 1.N or 1.N.P)")
    return int(match.group(1)), int(match.group(2) or 0)


def schema_file_name(kind: str, api_version: str) -> str:
    """kubeconform's `{{.ResourceKind}}{{.KindSuffix}}.json` for a kind and apiVersion."""
    group, _, version = api_version.rpartition("/")
    suffix = f"-{group.split('.')[0]}-{version}" if group else f"-{version}"
    return f"{kind}{suffix}.json".lower()


def strict_dir_name(kubernetes_version: str) -> str:
    """`{{.NormalizedKubernetesVersion}}-standalone-strict`: we always run -strict."""
    return f"v{normalize_kubernetes_version(kubernetes_version)}-standalone-strict"


def cache_key(kubernetes_version: str, crd_dir: Path) -> str:
    """Hash of every pinned input; a new value means a new schema set."""
    inputs = {
        "format": SCHEMA_FORMAT_VERSION,
        "kubernetes-validate": importlib.metadata.version("kubernetes-validate"),
        "kubernetes": normalize_kubernetes_version(kubernetes_version),
        "crds": {p.relative_to(crd_dir).as_posix(): sha256_file(p) for p in crd_files(crd_dir)},
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:20]


def ensure_schemas(kubernetes_version: str, crd_dir: Path | None = None) -> Path:
    """Directory to pass as kubeconform's -schema-location; built on first use of a key.

    Without crd_dir, the pinned CRDs (default_crd_dir(), verified against the lock); a given
    CRD directory holding SOURCES.txt is verified against it first (CrdVerificationError).
    Concurrent builders each build into a temporary directory; the first rename wins.
    """
    if crd_dir is None:
        crd_dir = default_crd_dir()
    elif not crd_dir.is_dir():
        raise SchemaBuildError(f"CRD directory {crd_dir} does not exist")
    elif (crd_dir / SOURCES_FILE).is_file() and (problems := verify_crds(crd_dir)):
        lines = "; ".join(f"{p.file}: {p.problem}" for p in problems)
        raise CrdVerificationError(f"CRDs in {crd_dir} do not match {SOURCES_FILE}: {lines}")
    root = cache_dir() / "schemas"
    final = root / cache_key(kubernetes_version, crd_dir)
    if not (final / MANIFEST).is_file():
        if final.exists():  # an incomplete set left by hand: never trust it
            shutil.rmtree(final)
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".build-{final.name}-", dir=root))
        try:
            build_schemas(kubernetes_version, crd_dir, tmp)
            os.rename(tmp, final)
        except OSError:
            if not (final / MANIFEST).is_file():  # not a lost race: a real failure
                raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    _link_patch_version(final, kubernetes_version)
    return final


def _link_patch_version(schema_dir: Path, kubernetes_version: str) -> None:
    """v1.N.P-standalone-strict -> v1.N.0-...: kubeconform run by hand with the environment's
    exact version (1.36.2) finds the schemas too. Relative, so a copied set keeps working."""
    name = f"v{exact_kubernetes_version(kubernetes_version)}-standalone-strict"
    target = strict_dir_name(kubernetes_version)
    link = schema_dir / name
    if name == target or link.is_symlink():
        return
    tmp = schema_dir / f".{name}.{os.getpid()}.tmp"
    try:
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target, target_is_directory=True)
        os.replace(tmp, link)
    except OSError:  # a read-only cache: the link is a convenience, the set is complete
        pass


def build_schemas(kubernetes_version: str, crd_dir: Path, dest: Path) -> dict[str, Any]:
    """Write the standalone-strict layout and manifest.json into dest; return the manifest."""
    started = time.perf_counter()
    k8s = KubernetesDefinitions(normalize_kubernetes_version(kubernetes_version))
    out = dest / strict_dir_name(kubernetes_version)
    out.mkdir(parents=True)
    kinds: dict[str, dict[str, str]] = {}
    measured: dict[int, tuple[Schema, str, int]] = {}
    schemas = [*k8s.kind_schemas(), *crd_schemas(crd_dir, k8s.inline_definition(_OBJECT_META))]
    for file in schemas:
        if file.name in kinds:
            other = kinds[file.name]["source"]
            raise SchemaBuildError(f"{file.name} comes from both {other} and {file.source}")
        kinds[file.name] = dict(apiVersion=file.api_version, kind=file.kind, source=file.source)
        schema = deduplicate(file.schema, measured=measured)
        text = json.dumps(schema, sort_keys=True, separators=(",", ":"))
        (out / file.name).write_text(text, encoding="utf-8")
    manifest = {
        "schemaFormatVersion": SCHEMA_FORMAT_VERSION,
        "kubernetesVersion": k8s.version,
        "kubernetesValidate": importlib.metadata.version("kubernetes-validate"),
        "crds": {p.relative_to(crd_dir).as_posix(): sha256_file(p) for p in crd_files(crd_dir)},
        "files": kinds,
        "buildSeconds": round(time.perf_counter() - started, 3),
    }
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


class KubernetesDefinitions:
    """The kubernetes-validate schemas of one Kubernetes minor, with refs inlined."""

    def __init__(self, version: str) -> None:
        self.version = version
        package = _kubernetes_validate_dir() / "kubernetes-json-schema"
        self.source = package / f"v{version}-local-strict"
        if not self.source.is_dir():
            shipped = sorted(p.name for p in package.glob("v*-local-strict"))
            raise SchemaBuildError(f"kubernetes-validate has no {self.source.name}: {shipped}")
        defs_file = json.loads((self.source / "_definitions.json").read_text())
        self._defs: dict[str, Schema] = defs_file["$defs"]
        self._done: dict[str, Schema] = {}

    def kind_schemas(self) -> Iterator[SchemaFile]:
        """A file for every kind (every schema with a group-version-kind)."""
        for path in sorted(self.source.glob("*.json")):
            raw = json.loads(path.read_text())
            gvks = raw.get("x-kubernetes-group-version-kind") if isinstance(raw, dict) else None
            if not gvks:
                continue
            schema = {"$schema": DRAFT4, **self._inline(raw, (), set())}
            for gvk in gvks:
                api_version = "/".join(filter(None, (gvk["group"], gvk["version"])))
                name = schema_file_name(gvk["kind"], api_version)
                source = f"kubernetes-validate {path.name}"
                yield SchemaFile(name, api_version, gvk["kind"], source, schema)

    def inline_definition(self, name: str) -> Schema:
        """A definition with every $ref inlined (recursion cut to {})."""
        return self._resolve(name, (), set())

    def _resolve(self, name: str, stack: tuple[str, ...], cuts: set[str]) -> Schema:
        if name in stack:
            cuts.add(name)
            return {}  # recursion (JSONSchemaProps): accept anything below this point
        if name in self._done:
            return self._done[name]
        inner: set[str] = set()
        result = self._inline(self._defs[name], (*stack, name), inner)
        inner.discard(name)
        # What is left in inner are cuts at our callers: the result depends on the path by
        # which we got here, so it must not be reused from another path.
        if not inner:
            self._done[name] = result
        cuts |= inner
        return result

    def _inline(self, node: Schema, stack: tuple[str, ...], cuts: set[str]) -> Schema:
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return _map_subschemas(node, lambda sub: self._inline(sub, stack, cuts))
        target = self._resolve(ref.rsplit("/", 1)[-1], stack, cuts)
        rest = self._inline({k: v for k, v in node.items() if k != "$ref"}, stack, cuts)
        if rest.keys() & target.keys():
            return {"allOf": [target, rest]}
        return {**target, **rest}


def _kubernetes_validate_dir() -> Path:
    """The installed kubernetes_validate package, found without importing it (~0.1 s)."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise SchemaBuildError("kubernetes-validate is not installed (requirements.txt)")
    return Path(next(iter(spec.submodule_search_locations)))


def _annotation(key: str) -> bool:
    """Keys that do not validate and only cost bytes (descriptions, x-kubernetes-*, ids)."""
    return key in ("description", "$id", "$schema") or key.startswith("x-kubernetes-")


def _map_subschemas(node: Schema, fn: Callable[[Schema], Any]) -> Schema:
    """Copy node without annotations, applying fn to each subschema (not to data keywords)."""
    out: Schema = {}
    for key, value in node.items():
        if _annotation(key):
            continue
        if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: fn(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_LISTS or (key == "items" and isinstance(value, list)):
            out[key] = [fn(sub) for sub in value]
        elif key in ("items", "additionalProperties", "additionalItems", "not") and isinstance(value, dict):
            out[key] = fn(value)
        else:
            out[key] = value
    return out


def deduplicate(
    schema: Schema,
    min_bytes: int = DEDUPLICATE_MIN_BYTES,
    measured: dict[int, tuple[Schema, str, int]] | None = None,
) -> Schema:
    """schema with each repeated subschema (>= min_bytes) moved to a local definition.

    Inlining copies a shared definition wherever it is used (ApplicationSet repeats its
    generators and Application template: 500 kB, 1.2 s for kubeconform to compile). A
    `#/definitions/<digest>` ref inside the same file keeps the file standalone and is
    compiled once. `measured` may be shared between calls to reuse the digests of shared
    subtrees (it keeps each node alive, so an id is never reused for another node).
    """
    measured = {} if measured is None else measured

    def measure(node: Schema) -> tuple[str, int]:
        """(digest of the content, approximate JSON size), bottom-up, once per node."""
        if id(node) not in measured:
            size = 0

            def child(sub: Schema) -> str:
                nonlocal size
                digest, child_size = measure(sub)
                size += child_size
                return digest

            text = json.dumps(_map_subschemas(node, child), sort_keys=True)
            digest = hashlib.sha256(text.encode()).hexdigest()[:16]
            measured[id(node)] = (node, digest, size + len(text))
        return measured[id(node)][1:]

    uses: Counter[str] = Counter()

    def count(node: Schema) -> Schema:
        digest = measure(node)[0]
        uses[digest] += 1
        if uses[digest] == 1:  # the inside of a repeated subschema is written once
            _map_subschemas(node, count)
        return node

    count(schema)
    definitions: dict[str, Schema] = {}

    def rewrite(node: Schema) -> Schema:
        digest, size = measure(node)
        if size < min_bytes or uses[digest] < 2:
            return _map_subschemas(node, rewrite)
        if digest not in definitions:
            definitions[digest] = {}  # reserve the name before descending
            definitions[digest] = _map_subschemas(node, rewrite)
        return {"$ref": f"#/definitions/{digest}"}

    body = _map_subschemas(schema, rewrite)
    if "$schema" in schema:
        body["$schema"] = schema["$schema"]
    if definitions:
        body["definitions"] = {**body.get("definitions", {}), **definitions}
    return body


def crd_schemas(crd_dir: Path, object_meta: Schema) -> Iterator[SchemaFile]:
    """A file for each served version of each CRD under crd_dir."""
    for path in crd_files(crd_dir):
        with path.open("rb") as stream:
            documents = [d for d in yaml.load_all(stream, Loader=_Loader) if d]
        for crd in documents:
            if crd.get("kind") != "CustomResourceDefinition":
                continue
            spec = crd["spec"]
            for version in spec["versions"]:
                if not version.get("served", False):
                    continue
                api_version = f"{spec['group']}/{version['name']}"
                raw = version.get("schema", {}).get("openAPIV3Schema")
                if raw is None:
                    raise SchemaBuildError(f"{path}: {api_version} has no openAPIV3Schema")
                kind = spec["names"]["kind"]
                schema = strict_crd_root(raw, kind, api_version, object_meta)
                source = path.relative_to(crd_dir).as_posix()
                yield SchemaFile(schema_file_name(kind, api_version), api_version, kind, source, schema)


def strict_crd_root(raw: Schema, kind: str, api_version: str, object_meta: Schema) -> Schema:
    """A CRD version's openAPIV3Schema as a standalone strict draft-04 schema."""
    root = strict_crd_schema(raw)
    properties = root.setdefault("properties", {})
    properties["apiVersion"] = {"type": "string", "enum": [api_version]}
    properties["kind"] = {"type": "string", "enum": [kind]}
    metadata = raw.get("properties", {}).get("metadata", {})
    # The apiserver validates metadata as ObjectMeta whatever the CRD says; a CRD may only
    # narrow it (e.g. name length), which allOf keeps without closing the object twice.
    narrowed = {k: v for k, v in strict_crd_schema(metadata).items() if k != "type"}
    narrowed.pop("additionalProperties", None)
    properties["metadata"] = {"allOf": [object_meta, narrowed]} if narrowed else object_meta
    root["additionalProperties"] = False
    root.setdefault("type", "object")
    return {"$schema": DRAFT4, **root}


def strict_crd_schema(node: Schema) -> Schema:
    """Structural-schema semantics in plain JSON schema (what the apiserver would prune)."""
    out = _map_subschemas(node, strict_crd_schema)
    preserve = bool(node.get("x-kubernetes-preserve-unknown-fields"))
    if node.get("x-kubernetes-int-or-string"):
        # Usually paired with anyOf [integer, string]; oneOf says the same, exactly once.
        if all(set(s) <= {"type"} for s in out.get("anyOf", [])):
            out.pop("anyOf", None)
        out["oneOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("x-kubernetes-embedded-resource") and "properties" in out:
        for key in ("apiVersion", "kind"):
            out["properties"].setdefault(key, {"type": "string"})
        out["properties"].setdefault("metadata", {"type": "object"})
    if "properties" in out and "additionalProperties" not in out and not preserve:
        out["additionalProperties"] = False
    # The apiserver drops a null field value (or defaults it) before validating, so a field
    # may be null whatever its schema says; a null list item is still an error.
    if "properties" in out:
        out["properties"] = {k: _accept_null(v) for k, v in out["properties"].items()}
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = _accept_null(out["additionalProperties"])
    if out.pop("nullable", False):
        out = _accept_null(out)
    return out


def _accept_null(schema: Schema) -> Schema:
    """schema, also accepting null (types, enums and our int-or-string oneOf)."""
    out = dict(schema)
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        out["type"] = [*kind, "null"]
    if isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    one_of = out.get("oneOf")
    if isinstance(one_of, list) and all("type" in branch for branch in one_of):
        out["oneOf"] = [b for b in one_of if b != {"type": "null"}] + [{"type": "null"}]
    return out
