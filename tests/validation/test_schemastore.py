"""The offline schema store: layout, standalone strict schemas, cache key, pinned CRDs."""

from __future__ import annotations

import io
import json
import re
import shutil
import stat
import urllib.request
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from generators.validation import schemastore
from generators.validation.kubeconform import run_kubeconform
from generators.validation.schemastore import (
    DRAFT4,
    MANIFEST,
    CrdVerificationError,
    SchemaBuildError,
    crd_files,
    deduplicate,
    ensure_schemas,
    exact_kubernetes_version,
    fetch_crds,
    normalize_kubernetes_version,
    read_sources,
    schema_file_name,
    strict_crd_schema,
    strict_dir_name,
    verify_crds,
)
from tests.support import mappings
from tools.toolchain import CACHE_ENV

from .conftest import KUBERNETES_VERSION


def _deref(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """node, or the local definition it refers to."""
    ref = node.get("$ref")
    if isinstance(ref, str):
        resolved: dict[str, Any] = root["definitions"][ref.removeprefix("#/definitions/")]
        return resolved
    return node


def _at(root: dict[str, Any], *path: str) -> dict[str, Any]:
    """The subschema at path, following local refs on the way."""
    node = _deref(root, root)
    for key in path:
        node = _deref(root, node[key])
    return node


def _writable_copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return dest


@pytest.mark.parametrize(
    ("kind", "api_version"),
    [
        ("Deployment", "apps/v1"),
        ("ConfigMap", "v1"),
        ("ClusterQueue", "kueue.x-k8s.io/v1beta2"),
        ("ClusterRole", "rbac.authorization.k8s.io/v1"),
        ("HorizontalPodAutoscaler", "autoscaling/v2"),
        ("ServiceMonitor", "monitoring.coreos.com/v1"),
    ],
)
def test_file_names_follow_kubeconform_template(kind: str, api_version: str, tmp_path: Path) -> None:
    """The pinned kubeconform itself finds an object's schema under the name we give it: a
    schema set holding only that file (accepting anything) validates the object, where a
    name off its template would be a missing schema."""
    strict = tmp_path / "schemas" / strict_dir_name(KUBERNETES_VERSION)
    strict.mkdir(parents=True)
    (strict / schema_file_name(kind, api_version)).write_text("{}", encoding="utf-8")
    manifest = tmp_path / "object.yaml"
    manifest.write_text(
        yaml.safe_dump({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}), encoding="utf-8"
    )
    run = run_kubeconform([manifest], KUBERNETES_VERSION, tmp_path / "schemas")
    assert [f.line() for f in run.findings] == [] and run.valid == 1


@pytest.mark.parametrize(
    ("given", "normalized"), [("1.36", "1.36.0"), ("v1.36.5", "1.36.0"), ("1.30.0", "1.30.0")]
)
def test_kubernetes_version_is_normalized_to_the_minor(given: str, normalized: str) -> None:
    assert normalize_kubernetes_version(given) == normalized
    assert strict_dir_name(given) == f"v{normalized}-standalone-strict"


@pytest.mark.parametrize(("given", "exact"), [("1.36", "1.36.0"), ("v1.36.5", "1.36.5")])
def test_exact_version_keeps_the_patch(given: str, exact: str) -> None:
    assert exact_kubernetes_version(given) == exact


@pytest.mark.parametrize("bad", ["", "2.0", "1", "latest", "1.36.x"])
def test_bad_kubernetes_version_is_rejected(bad: str) -> None:
    with pytest.raises(SchemaBuildError):
        normalize_kubernetes_version(bad)


def test_layout_has_every_kind_and_served_crd_version(schema_dir: Path, crd_dir: Path) -> None:
    strict = schema_dir / strict_dir_name(KUBERNETES_VERSION)
    files = {p.name for p in strict.glob("*.json")}
    assert {"deployment-apps-v1.json", "poddisruptionbudget-policy-v1.json"} <= files
    for path in crd_files(crd_dir):
        for crd in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader):
            spec = crd["spec"]
            for version in (v for v in spec["versions"] if v["served"]):
                api_version = f"{spec['group']}/{version['name']}"
                assert schema_file_name(spec["names"]["kind"], api_version) in files
    assert set(json.loads((schema_dir / MANIFEST).read_text())["files"]) == files


def test_every_file_is_standalone_draft4_and_reasonably_small(schema_dir: Path) -> None:
    strict = schema_dir / strict_dir_name(KUBERNETES_VERSION)
    total = 0
    for path in strict.glob("*.json"):
        total += path.stat().st_size
        assert path.stat().st_size < 1_000_000, path.name
        schema = json.loads(path.read_text())
        assert schema["$schema"] == DRAFT4, path.name
        refs = {n["$ref"] for n in mappings(schema) if isinstance(n.get("$ref"), str)}
        local = {f"#/definitions/{name}" for name in schema.get("definitions", {})}
        assert refs <= local, f"{path.name} is not standalone: {sorted(refs - local)[:3]}"
    assert total < 20_000_000


def test_repeated_subschemas_become_local_definitions() -> None:
    item = {
        "type": "object",
        "properties": {f"field{i}": {"type": "string", "maxLength": i} for i in range(40)},
        "additionalProperties": False,
    }
    schema = {
        "$schema": DRAFT4,
        "type": "object",
        "properties": {"a": item, "b": {"type": "array", "items": dict(item)}, "c": {}},
    }
    out = deduplicate(schema)
    (name,) = out["definitions"]
    assert out["properties"]["a"] == out["properties"]["b"]["items"] == {"$ref": f"#/definitions/{name}"}
    assert out["definitions"][name] == item and out["$schema"] == DRAFT4
    assert deduplicate(schema, min_bytes=10**9) == schema  # small repeats stay inline
    for instance in ({"a": {"field3": "abc"}}, {"b": [{"field3": "abcd"}]}, {"a": {"x": 1}}):
        expected = jsonschema.Draft4Validator(schema).is_valid(instance)
        assert jsonschema.Draft4Validator(out).is_valid(instance) == expected


def test_recursive_jsonschemaprops_is_cut_to_anything(schema_dir: Path) -> None:
    name = "customresourcedefinition-apiextensions-v1.json"
    schema = json.loads((schema_dir / strict_dir_name(KUBERNETES_VERSION) / name).read_text())
    props = _at(
        schema,
        "properties",
        "spec",
        "properties",
        "versions",
        "items",
        "properties",
        "schema",
        "properties",
        "openAPIV3Schema",
    )
    assert props["additionalProperties"] is False  # the first level is still strict
    nested = _deref(schema, props["properties"]["properties"])
    assert nested["additionalProperties"] == {}  # then: anything
    assert props["properties"]["items"] == {}


def test_crd_metadata_is_object_meta(schema_dir: Path) -> None:
    name = "localqueue-kueue-v1beta2.json"
    schema = json.loads((schema_dir / strict_dir_name(KUBERNETES_VERSION) / name).read_text())
    metadata = _at(schema, "properties", "metadata")
    assert metadata["additionalProperties"] is False
    assert {"name", "namespace", "labels", "annotations"} <= set(metadata["properties"])
    assert schema["properties"]["kind"]["enum"] == ["LocalQueue"]
    assert schema["additionalProperties"] is False


def test_strict_crd_schema_closes_objects_like_the_apiserver_prunes() -> None:
    raw = {
        "type": "object",
        "description": "dropped",
        "properties": {
            "description": {"type": "string", "description": "a field called description"},
            "quota": {
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
                "pattern": "^[0-9]+$",
            },
            "open": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"known": {"type": "object", "properties": {}}},
            },
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
            "list": {"type": "array", "items": {"type": "object", "properties": {"a": {}}}},
            "defaulted": {
                "type": "object",
                "default": {"properties": {"x": 1}},
                "properties": {"x": {"type": "integer"}},
            },
            "maybe": {"type": "string", "nullable": True},
            "mode": {"type": "string", "enum": ["A", "B"]},
            "names": {"type": "array", "items": {"type": "string"}},
            "values": {"type": "array", "items": {"type": "string", "nullable": True}},
        },
    }
    out = strict_crd_schema(raw)
    props = out["properties"]
    assert out["additionalProperties"] is False and "description" not in out
    assert props["description"] == {"type": ["string", "null"]}  # a field, not an annotation
    assert props["quota"] == {
        "oneOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}],
        "pattern": "^[0-9]+$",
    }
    assert "additionalProperties" not in props["open"]  # preserved: stays open
    assert props["open"]["properties"]["known"]["additionalProperties"] is False
    assert props["map"]["additionalProperties"] == {"type": ["string", "null"]}
    assert props["list"]["items"]["additionalProperties"] is False
    assert props["defaulted"]["default"] == {"properties": {"x": 1}}  # data, untouched
    assert props["maybe"]["type"] == ["string", "null"]
    # A null field is dropped by the apiserver; a null list item is kept, and rejected.
    assert props["mode"]["enum"] == ["A", "B", None]
    assert props["names"]["items"] == {"type": "string"}
    assert props["values"]["items"] == {"type": ["string", "null"]}


def test_cache_is_reused_and_rebuilt_when_a_pin_changes(
    tmp_path: Path, crd_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    crds = tmp_path / "crds"
    crds.mkdir()
    source = crd_dir / "kueue-v0.19.2" / "kueue.x-k8s.io_localqueues.yaml"
    shutil.copy(source, crds / source.name)
    builds: list[str] = []
    real_build = schemastore.build_schemas

    def counting_build(version: str, crd_dir: Path, dest: Path) -> dict[str, Any]:
        builds.append(version)
        return real_build(version, crd_dir, dest)

    monkeypatch.setattr(schemastore, "build_schemas", counting_build)
    first = ensure_schemas("1.36", crds)
    assert first.parent == tmp_path / "cache" / "schemas"
    stamp = (first / "manifest.json").stat().st_mtime_ns
    assert ensure_schemas("v1.36.3", crds) == first  # same minor: same key, no build
    assert (first / "manifest.json").stat().st_mtime_ns == stamp
    assert len(builds) == 1
    # ... but kubeconform run by hand with -kubernetes-version 1.36.3 finds the set too.
    assert (first / "v1.36.3-standalone-strict").resolve() == first / strict_dir_name("1.36")

    assert ensure_schemas("1.35", crds) != first  # Kubernetes pin
    (crds / source.name).write_text(source.read_text() + "# changed\n")
    changed = ensure_schemas("1.36", crds)  # CRD content
    monkeypatch.setattr(schemastore, "SCHEMA_FORMAT_VERSION", 999)
    reformatted = ensure_schemas("1.36", crds)  # our own output format
    assert len({first, changed, reformatted}) == 3 and len(builds) == 4
    assert not [p for p in first.parent.iterdir() if p.name.startswith(".build-")]


def test_lost_build_race_uses_the_winner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    crds = tmp_path / "crds"
    crds.mkdir()
    final = tmp_path / "cache" / "schemas" / schemastore.cache_key("1.36", crds)

    def other_process_wins(version: str, crd_dir: Path, dest: Path) -> dict[str, Any]:
        final.mkdir(parents=True)
        (final / "manifest.json").write_text("{}")
        (dest / "partial").write_text("ours")
        return {}

    monkeypatch.setattr(schemastore, "build_schemas", other_process_wins)
    assert ensure_schemas("1.36", crds) == final
    assert sorted(p.name for p in final.parent.iterdir()) == [final.name]


def test_unknown_kubernetes_minor_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SchemaBuildError, match=re.escape("v1.99.0-local-strict")):
        schemastore.build_schemas("1.99", tmp_path, tmp_path / "out")


def test_verify_crds_accepts_the_pinned_files(crd_dir: Path) -> None:
    assert verify_crds(crd_dir) == []


def test_verify_crds_detects_tampered_missing_and_unpinned_files(tmp_path: Path, crd_dir: Path) -> None:
    copy = _writable_copy(crd_dir, tmp_path / "crds")
    tampered = copy / "kueue-v0.19.2" / "kueue.x-k8s.io_clusterqueues.yaml"
    tampered.write_text(tampered.read_text().replace("nominalQuota", "nominalQouta", 1))
    (copy / "argo-cd-v3.5.1" / "appproject-crd.yaml").unlink()
    (copy / "extra.yaml").write_text("kind: CustomResourceDefinition\n")
    problems = {p.file: p.problem for p in verify_crds(copy)}
    assert set(problems) == {
        "kueue-v0.19.2/kueue.x-k8s.io_clusterqueues.yaml",
        "argo-cd-v3.5.1/appproject-crd.yaml",
        "extra.yaml",
    }
    assert problems["kueue-v0.19.2/kueue.x-k8s.io_clusterqueues.yaml"].startswith("sha256 ")
    assert problems["argo-cd-v3.5.1/appproject-crd.yaml"] == "missing"
    with pytest.raises(CrdVerificationError, match="clusterqueues"):
        ensure_schemas(KUBERNETES_VERSION, copy)


def test_sources_give_raw_github_urls(crd_dir: Path) -> None:
    pins = {s.file: s for s in read_sources(crd_dir / "SOURCES.txt")}
    assert len(pins) == len(crd_files(crd_dir))
    assert pins["kueue-v0.19.2/kueue.x-k8s.io_clusterqueues.yaml"].url == (
        "https://raw.githubusercontent.com/kubernetes-sigs/kueue/v0.19.2/"
        "config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml"
    )


def test_fetch_crds_verifies_each_download(
    tmp_path: Path, crd_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No network here: serve the pinned bytes for each upstream URL, then a tampered body.
    by_url = {s.url: crd_dir / s.file for s in read_sources(crd_dir / "SOURCES.txt")}
    tamper = {"on": False}

    def fake_urlopen(url: str, timeout: float) -> io.BytesIO:
        body = by_url[url].read_bytes()
        return io.BytesIO(body + b"#" if tamper["on"] else body)

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    written = fetch_crds(tmp_path / "fetched", crd_dir / "SOURCES.txt")
    assert len(written) == len(by_url)
    assert verify_crds(tmp_path / "fetched") == []
    tamper["on"] = True
    with pytest.raises(CrdVerificationError, match="sha256"):
        fetch_crds(tmp_path / "tampered", crd_dir / "SOURCES.txt")
    assert not (tmp_path / "tampered").exists()


@pytest.mark.slow
def test_every_schema_compiles_in_kubeconform(kubeconform: Path, schema_dir: Path, tmp_path: Path) -> None:
    # kubeconform drops a schema it cannot compile (draft-04 metaschema, RE2 patterns) and
    # calls it missing: feed it one stub object per file and demand a schema for each.
    files = json.loads((schema_dir / MANIFEST).read_text())["files"]
    stubs = [
        {"apiVersion": f["apiVersion"], "kind": f["kind"], "metadata": {"name": "x"}}
        for f in files.values()
        if f["kind"] != "List"  # kubeconform splits a List into its items
    ]
    path = tmp_path / "stubs.yaml"
    path.write_text(yaml.safe_dump_all(stubs))
    result = run_kubeconform([path], KUBERNETES_VERSION, schema_dir)
    broken = [f.line() for f in result.findings if f.check != "kubeconform/invalid"]
    assert broken == []
    assert result.counted == len(stubs)
