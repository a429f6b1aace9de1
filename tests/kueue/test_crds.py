"""Rendered Kueue objects validate against the pinned v0.19.2 CRDs (schemas/crds.lock).

A quick structural check with jsonschema over each CRD's served openAPIV3Schema, with
unknown fields rejected; the full gate (kubeconform -strict, CEL on a real API server)
lives in tests/validation and tests/controlplane.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from generators.layout import environment_names
from generators.model.load import load
from generators.pipeline import render
from generators.validation.pinned_crds import CrdPinError, resolve_crd_dir
from tests.support import ROOT

KUEUE_CRDS = "kueue-v0.19.2"  # the folder of the Kueue CRDs in the pinned CRD directory


def _strict(schema: Any) -> Any:
    """Close every object that lists its properties, as the API server prunes/rejects."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def _kueue_crd_dir() -> Path:
    """The pinned Kueue CRDs; fails with the fetch command where there is no verified copy."""
    try:
        return resolve_crd_dir() / KUEUE_CRDS
    except CrdPinError as error:
        pytest.fail(str(error), pytrace=False)


@cache
def _schemas() -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for path in sorted(_kueue_crd_dir().glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
        for version in crd["spec"]["versions"]:
            if version.get("served"):
                schema = _strict(version["schema"]["openAPIV3Schema"])
                schema["properties"]["metadata"] = {"type": "object"}
                out[(f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])] = schema
    return out


@pytest.mark.parametrize("env_name", environment_names(ROOT))
def test_kueue_objects_match_pinned_crds(env_name: str) -> None:
    schemas = _schemas()
    checked = 0
    for f in render.render_environment(load(ROOT, env_name)):
        if f.obj["apiVersion"].startswith("kueue.x-k8s.io/"):
            schema = schemas[(f.obj["apiVersion"], f.obj["kind"])]
            jsonschema.validate(f.obj, schema, cls=jsonschema.Draft7Validator)
            checked += 1
    assert checked >= 5


def test_the_check_rejects_a_typo() -> None:
    schemas = _schemas()
    bad = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "x"},
        "spec": {"clusterQueues": "x"},
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schemas[("kueue.x-k8s.io/v1beta2", "LocalQueue")])


def test_crd_dir_is_the_pinned_one() -> None:
    assert Path(_kueue_crd_dir(), "kueue.x-k8s.io_clusterqueues.yaml").is_file()
