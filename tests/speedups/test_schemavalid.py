"""Schema checks: successes are cached (rendering one environment then never imports
jsonschema), failures never are; $refs resolve as the referencing library resolves them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from generators.spec import schema
from generators.spec.load import load_document
from tests.support import ROOT


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRAINYARD_CACHE", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("TRAINYARD_SPEEDUPS", raising=False)
    return tmp_path


def forbid_checking(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(doc: Any) -> Any:
        raise AssertionError("checked again")

    monkeypatch.setattr(schema, "_check", refuse)


def test_a_valid_document_is_checked_once(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = load_document(ROOT, "prod")
    assert schema.check(doc) == []
    forbid_checking(monkeypatch)
    assert schema.check(load_document(ROOT, "prod")) == []
    with pytest.raises(AssertionError, match="checked again"):
        schema.check(load_document(ROOT, "dev"))  # another document: checked


def test_an_invalid_document_is_checked_every_time(cache: Path) -> None:
    doc = load_document(ROOT, "dev")
    doc.value["cluster"]["kubernetesVersion"] = 1.36
    first = schema.check(doc)
    assert first and "expected string" in first[0].message
    assert schema.check(doc) == first
    assert not (cache / "schema-valid").exists()


@pytest.mark.parametrize(
    "variable", [("CI", "true"), ("TRAINYARD_SPEEDUPS", "0"), ("TRAINYARD_SPEEDUPS", "stamps,shapes")]
)
def test_no_cache_in_ci(cache: Path, variable: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(*variable)
    assert schema.check(load_document(ROOT, "prod")) == []
    assert not (cache / "schema-valid").exists()


def all_refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [*([node["$ref"]] if "$ref" in node else []), *(r for v in node.values() for r in all_refs(v))]
    if isinstance(node, list):
        return [r for v in node for r in all_refs(v)]
    return []


@pytest.mark.parametrize("path", sorted((ROOT / "schemas").glob("*.schema.json")), ids=lambda p: p.name)
def test_refs_resolve_as_referencing_resolves_them(path: Path) -> None:
    contents = json.loads(path.read_text())
    _, registry = schema._schemas()
    resolver = registry.resolver(base_uri=contents["$id"])
    refs = all_refs(contents)
    assert refs
    for ref in refs:
        resolved = resolver.lookup(ref)
        ours, base = schema._resolve(ref, contents["$id"])
        assert ours == resolved.contents
        assert base == str(resolved.resolver._base_uri).partition("#")[0]
