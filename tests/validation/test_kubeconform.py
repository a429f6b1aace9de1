"""kubeconform -strict with our schemas: valid examples pass, each kind of problem is found."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from generators.validation.kubeconform import (
    Finding,
    KubeconformFailed,
    KubeconformResult,
    count_objects,
    run_kubeconform,
)
from generators.validation.schemastore import crd_files, ensure_schemas, strict_dir_name

from .conftest import FIXTURES, KUBERNETES_VERSION

VALID = FIXTURES / "valid"
INVALID = FIXTURES / "invalid"
KUBERNETES_KINDS = {
    ("v1", "Namespace"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("v1", "ConfigMap"),
    ("v1", "ServiceAccount"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("apps/v1", "Deployment"),
    ("v1", "Service"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("policy/v1", "PodDisruptionBudget"),
}


def _kinds(directory: Path) -> set[tuple[str, str]]:
    documents = (yaml.safe_load(p.read_text()) for p in sorted(directory.glob("*.yaml")))
    return {(d["apiVersion"], d["kind"]) for d in documents}


def _pinned_crd_kinds(crd_dir: Path) -> set[tuple[str, str]]:
    """(apiVersion, kind) of the storage version of every pinned CRD."""
    kinds = set()
    for path in crd_files(crd_dir):
        for crd in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader):
            spec = crd["spec"]
            storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
            kinds.add((f"{spec['group']}/{storage}", spec["names"]["kind"]))
    return kinds


@pytest.fixture(scope="module")
def valid_run(kubeconform: Path, schema_dir: Path) -> KubeconformResult:
    return run_kubeconform([VALID], KUBERNETES_VERSION, schema_dir)


@pytest.fixture(scope="module")
def invalid_run(kubeconform: Path, schema_dir: Path) -> KubeconformResult:
    return run_kubeconform([INVALID], KUBERNETES_VERSION, schema_dir)


def test_examples_cover_every_pinned_crd_and_required_kubernetes_kind(crd_dir: Path) -> None:
    missing = (_pinned_crd_kinds(crd_dir) | KUBERNETES_KINDS) - _kinds(VALID)
    assert not missing, f"add a minimal valid example to {VALID} for {sorted(missing)}"


def test_valid_examples_pass_strict(valid_run: KubeconformResult) -> None:
    assert [f.line() for f in valid_run.findings] == []
    files = len(list(VALID.glob("*.yaml")))
    assert (valid_run.valid, valid_run.expected, valid_run.counted) == (files, files, files)


def test_integer_cpu_limit_is_int_or_string(valid_run: KubeconformResult) -> None:
    deployment = yaml.safe_load((VALID / "deployment-gate.yaml").read_text())
    limits = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["cpu"] == 2  # an int, not "2": the case the oneOf must accept
    assert not [f for f in valid_run.findings if "deployment" in f.file]


@pytest.mark.parametrize(
    ("file", "check", "field", "fragment"),
    [
        ("service-unknown-field.yaml", "kubeconform/invalid", "/spec", "'portz' not allowed"),
        ("deployment-wrong-type.yaml", "kubeconform/invalid", "/spec/replicas", "integer"),
        ("widget-no-schema.yaml", "kubeconform/no-schema", "", "example.com/v1 Widget"),
        (
            "clusterqueue-typo.yaml",
            "kubeconform/invalid",
            "/spec/resourceGroups/0/flavors/0/resources/0",
            "'borrowingLimt' not allowed",
        ),
        ("localqueue-metadata-typo.yaml", "kubeconform/invalid", "/metadata", "'lables'"),
        (
            "clusterqueue-null-covered-resource.yaml",
            "kubeconform/invalid",
            "/spec/resourceGroups/0/coveredResources/0",
            "",
        ),
        (
            "clusterqueue-fractional-quota.yaml",
            "kubeconform/invalid",
            "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota",
            "",
        ),
    ],
)
def test_invalid_examples_are_reported(
    invalid_run: KubeconformResult, file: str, check: str, field: str, fragment: str
) -> None:
    found = [f for f in invalid_run.findings if Path(f.file).name == file]
    assert [(f.check, f.field) for f in found] == [(check, field)], [f.line() for f in found]
    assert fragment in found[0].message


def test_invalid_run_accounts_for_every_object(invalid_run: KubeconformResult) -> None:
    files = len(list(INVALID.glob("*.yaml")))
    assert invalid_run.expected == invalid_run.counted == files
    assert invalid_run.valid == 0
    assert not [f for f in invalid_run.findings if f.status == "uncounted"]


def test_schema_that_fails_to_compile_is_a_finding(kubeconform: Path, tmp_path: Path) -> None:
    # kubeconform drops a schema it cannot compile and calls it missing: we must say so.
    strict = tmp_path / strict_dir_name(KUBERNETES_VERSION)
    strict.mkdir()
    (strict / "namespace-v1.json").write_text('{"type": 12}')
    result = run_kubeconform([VALID / "namespace-team-a.yaml"], KUBERNETES_VERSION, tmp_path)
    assert [f.check for f in result.findings] == ["kubeconform/no-schema"]
    assert result.valid == 0


def test_object_kubeconform_did_not_count_is_a_finding(kubeconform: Path, schema_dir: Path) -> None:
    path = VALID / "namespace-team-a.yaml"
    result = run_kubeconform([path], KUBERNETES_VERSION, schema_dir, expected={str(path): 2})
    assert [(f.check, f.file) for f in result.findings] == [("kubeconform/uncounted", str(path))]
    assert "accounted for 1 object(s), the file holds 2" in result.findings[0].message


def test_multi_document_files_and_lists_are_counted(
    kubeconform: Path, schema_dir: Path, tmp_path: Path
) -> None:
    namespace = (VALID / "namespace-team-a.yaml").read_text()
    configmap = yaml.safe_load((VALID / "configmap-settings.yaml").read_text())
    items = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [configmap] * 2})
    path = tmp_path / "bundle.yaml"
    path.write_text(f"---\n{namespace}---\n# only a comment\n---\n{items}")
    assert count_objects([path]) == {str(path): 3}
    result = run_kubeconform([tmp_path], KUBERNETES_VERSION, schema_dir)
    assert (result.findings, result.valid, result.expected) == ((), 3, 3)


def test_missing_schema_set_is_an_error_not_a_pass(tmp_path: Path) -> None:
    with pytest.raises(KubeconformFailed, match="standalone-strict"):
        run_kubeconform([VALID], KUBERNETES_VERSION, tmp_path)


def test_finding_line_format() -> None:
    finding = Finding(
        "rendered/prod/kueue/clusterqueue-a.yaml",
        "ClusterQueue",
        "a",
        "kubeconform/invalid",
        "additional properties 'x' not allowed",
        "invalid",
        field="/spec",
    )
    assert finding.line() == (
        "rendered/prod/kueue/clusterqueue-a.yaml: ClusterQueue/a: kubeconform/invalid: "
        "/spec: additional properties 'x' not allowed"
    )


def test_schema_dir_copy_is_independent_of_location(
    kubeconform: Path, schema_dir: Path, tmp_path: Path
) -> None:
    # The set is plain files with no absolute refs: a moved copy validates the same.
    copy = tmp_path / "moved"
    shutil.copytree(schema_dir, copy)
    result = run_kubeconform([VALID / "clusterqueue-training.yaml"], "v1.36.4", copy)
    assert (result.findings, result.valid) == ((), 1)


def test_kubeconform_by_hand_with_the_exact_environment_version(kubeconform: Path, crd_dir: Path) -> None:
    # Callers that run kubeconform themselves pass the environment's version (1.36.2).
    schema_dir = ensure_schemas("1.36.2", crd_dir)
    done = subprocess.run(
        [
            str(kubeconform),
            "-strict",
            "-summary",
            "-kubernetes-version",
            "1.36.2",
            "-schema-location",
            str(schema_dir),
            str(VALID / "clusterqueue-training.yaml"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Valid: 1," in done.stdout


def test_a_run_over_several_folders_splits_into_their_own_results(
    kubeconform: Path, schema_dir: Path
) -> None:
    """validate runs kubeconform once per batch of environments and reads each one's part."""
    from generators.validation.kubeconform import part

    together = run_kubeconform([VALID, INVALID], KUBERNETES_VERSION, schema_dir)
    for folder in (VALID, INVALID):
        alone, share = run_kubeconform([folder], KUBERNETES_VERSION, schema_dir), part(together, folder)
        assert share.findings == alone.findings
        assert (share.valid, share.invalid, share.errors, share.skipped, share.expected) == (
            alone.valid,
            alone.invalid,
            alone.errors,
            alone.skipped,
            alone.expected,
        )
    assert part(together, VALID).expected + part(together, INVALID).expected == together.expected
