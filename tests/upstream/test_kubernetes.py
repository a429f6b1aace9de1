"""Issue 22 item 2: the supported Kubernetes range (generators/upstream/kubernetes.py, README).

Below 1.36 there is no MutatingAdmissionPolicy (GA, admissionregistration.k8s.io/v1, in
1.36), so the priority enforcement renders validating-only: a class-less training pod is
refused with the class to set, instead of silently running at priority 0. Outside the range
the version is refused at its line. `validate` (real kubeconform, that version's schemas)
accepts what 1.33 renders: before the fix it blamed a missing MutatingAdmissionPolicy CRD.
Expected values are literals of the small spec below.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support import CORPUS, ROOT
from tests.support.scratch import repo_with, run_cli

MINIMAL = (CORPUS / "valid-minimal.yaml").read_text()


def _at(version: str) -> str:
    assert '"1.36.2"' in MINIMAL
    return MINIMAL.replace('"1.36.2"', f'"{version}"')


def _priorities(root: Path) -> dict[str, dict[str, object]]:
    folder = root / "rendered" / "bad" / "priorities"
    return {p.name: yaml.safe_load(p.read_text()) for p in sorted(folder.glob("*.yaml"))}


def test_below_1_36_the_priority_policy_validates_only(tmp_path: Path) -> None:
    root = repo_with(tmp_path, _at("1.33.5"))
    code, _, err = run_cli(root, "render", "bad")
    assert code == 0, err
    files = _priorities(root)
    assert not [name for name in files if name.startswith("mutatingadmissionpolicy")], sorted(files)
    policy = files["validatingadmissionpolicy-trainyard-training-priority.yaml"]
    validation = policy["spec"]["validations"][0]  # type: ignore[index]
    assert validation["expression"] == (
        'has(object.spec.priorityClassName) && object.spec.priorityClassName in ["train"]'
    )
    assert (
        "set priorityClassName: train (Kubernetes 1.33.5 has no MutatingAdmissionPolicy"
        in (validation["messageExpression"])
    )
    assert "validatingadmissionpolicybinding-trainyard-training-priority.yaml" in files


def test_from_1_36_a_classless_training_pod_is_defaulted(tmp_path: Path) -> None:
    root = repo_with(tmp_path, _at("1.36.2"))
    code, _, err = run_cli(root, "render", "bad")
    assert code == 0, err
    files = _priorities(root)
    mutating = files["mutatingadmissionpolicy-trainyard-training-priority.yaml"]
    expression = mutating["spec"]["mutations"][0]["applyConfiguration"]["expression"]  # type: ignore[index]
    assert expression == (
        'Object{spec: Object.spec{priorityClassName: "train", priority: 1000, '
        'preemptionPolicy: "PreemptLowerPriority"}}'
    )


@pytest.mark.parametrize("version", ["1.31.4", "1.38.0"])
def test_a_version_outside_the_range_is_refused_at_its_line(tmp_path: Path, version: str) -> None:
    text = _at(version)
    line = text.splitlines()[2]
    assert line.startswith("cluster:")
    column = line.index(f'"{version}"') + 1
    root = repo_with(tmp_path, text)
    code, _, err = run_cli(root, "render", "bad")
    assert code == 1
    assert err.splitlines()[0] == (
        f"environments/bad.yaml:3:{column}: error: Kubernetes {version} is outside the supported range "
        "1.32 to 1.37 (cluster.kubernetesVersion); the rendered objects are checked against that "
        "range's API schemas (generators/upstream/kubernetes.py says why each end is there)"
    )


def _without_block(text: str, key: str) -> str:
    """`text` without the top-level block `key:` (up to the next top-level line)."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{key}:"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1] not in (" ", "\n", "#")), len(lines))
    return "".join(lines[:start] + lines[end:])


def test_health_quarantine_below_1_36_is_refused_with_the_reason(tmp_path: Path) -> None:
    staging = (ROOT / "environments" / "staging.yaml").read_text()
    assert "backend: trainyard" in staging and 'kubernetesVersion: "1.36.2"' in staging
    # Without overflow (refused below 1.36 on its own), so the health rule is what answers.
    text = _without_block(staging.replace("name: staging", "name: bad", 1), "overflow")
    root = repo_with(tmp_path, text.replace('kubernetesVersion: "1.36.2"', 'kubernetesVersion: "1.35.4"'))
    code, _, err = run_cli(root, "render", "bad")
    assert code == 1
    assert (
        "error: health backend trainyard needs Kubernetes 1.36 or newer, the cluster runs 1.35.4 "
        "(health.backend)" in err
    ), err


@pytest.mark.slow
def test_validate_accepts_what_1_33_renders(tmp_path: Path) -> None:
    root = repo_with(tmp_path, _at("1.33.5"))
    assert run_cli(root, "render", "bad")[0] == 0
    code, out, err = run_cli(root, "validate", "bad")
    assert code == 0, out + err


def test_the_readme_states_the_range_the_code_enforces() -> None:
    from generators.upstream import kubernetes

    readme = (ROOT / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| Kubernetes |"))
    assert (kubernetes.OLDEST, kubernetes.NEWEST) == ((1, 32), (1, 37))
    assert "| 1.32 to 1.37 (" in row
