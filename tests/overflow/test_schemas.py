"""Every rendered overflow object is valid against the Kubernetes schemas of its cluster's
version: the pinned kubeconform, -strict, offline schemas (generators/validation)."""

from __future__ import annotations

import pytest

from generators.model.load import load
from generators.validation.kubeconform import run_kubeconform
from generators.validation.schemastore import ensure_schemas
from tests.support import ROOT, tool

from .conftest import overflow_envs, rendered


@pytest.mark.parametrize("env", overflow_envs())
def test_rendered_overflow_is_schema_valid(env: str) -> None:
    tool("kubeconform")
    version = load(ROOT, env).kubernetes_version
    result = run_kubeconform([ROOT / "rendered" / env / "overflow"], version, ensure_schemas(version))
    assert [finding.line() for finding in result.findings] == []
    assert result.valid == result.expected == len(rendered(env))
    kinds = {obj["kind"] for _, obj in rendered(env)}
    assert {
        "MutatingAdmissionPolicy",
        "ValidatingAdmissionPolicy",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "Deployment",
        "ClusterRole",
    } <= kinds
