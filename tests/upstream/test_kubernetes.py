"""The supported Kubernetes range (generators/upstream/kubernetes.py, README).

Below 1.36 there is no MutatingAdmissionPolicy (GA, admissionregistration.k8s.io/v1, in
1.36), so the priority enforcement renders validating-only: a class-less training pod is
refused with the class to set, instead of silently running at priority 0. Outside the range
the version is refused at its line. `validate` (real kubeconform, that version's schemas)
accepts what 1.33 renders: before the fix it blamed a missing MutatingAdmissionPolicy CRD.
Expected values are literals of the small spec below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import CORPUS, ROOT
from tests.support.scratch import refused, rendered_repo, repo_with, run_cli

MINIMAL = (CORPUS / "valid-minimal.yaml").read_text()


def _at(version: str) -> str:
    assert '"1.36.2"' in MINIMAL
    return MINIMAL.replace('"1.36.2"', f'"{version}"')


def _priorities(root: Path) -> dict[str, dict[str, Any]]:
    folder = root / "rendered" / "bad" / "priorities"
    return {p.name: yaml.safe_load(p.read_text()) for p in sorted(folder.glob("*.yaml"))}


def test_below_1_36_the_priority_policy_validates_only(tmp_path: Path) -> None:
    root = rendered_repo(tmp_path, _at("1.33.5"))
    files = _priorities(root)
    assert not [name for name in files if name.startswith("mutatingadmissionpolicy")], sorted(files)
    policy = files["validatingadmissionpolicy-trainyard-training-priority.yaml"]
    validation = policy["spec"]["validations"][0]
    assert validation["expression"] == (
        'has(object.spec.priorityClassName) && object.spec.priorityClassName in ["train"]'
    )
    assert (
        "set priorityClassName: train (Kubernetes 1.33.5 has no MutatingAdmissionPolicy"
        in (validation["messageExpression"])
    )
    assert "validatingadmissionpolicybinding-trainyard-training-priority.yaml" in files


def test_from_1_36_a_classless_training_pod_is_defaulted(tmp_path: Path) -> None:
    root = rendered_repo(tmp_path, _at("1.36.2"))
    files = _priorities(root)
    mutating = files["mutatingadmissionpolicy-trainyard-training-priority.yaml"]
    expression = mutating["spec"]["mutations"][0]["applyConfiguration"]["expression"]
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
    assert refused(repo_with(tmp_path, text), "render", "bad")[0] == (
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


MOCK_PROVIDER = (
    """      type: mock
      image: {repository: ghcr.io/example/virtual-kubelet, tag: v1.14.1}  # the version tools/ pins and """
    + """tests run
      credentialsSecret: {name: mock-provider, key: token}
      config: {cpu: "64", memory: 512Gi, pods: "110"}
"""
)
INTERLINK_PROVIDER = """      type: interlink
      image: {repository: ghcr.io/example/virtual-kubelet-interlink, tag: 0.6.1}
      credentialsSecret: {name: mock-provider, key: token}
      config: {InterlinkURL: "https://interlink.example.org", InterlinkPort: "443"}
"""


def _staging_at(version: str, *, interlink: bool) -> str:
    """staging (overflow with one provider, trainyard health) renamed `bad`, at `version`."""
    staging = (ROOT / "environments" / "staging.yaml").read_text()
    assert 'kubernetesVersion: "1.36.2"' in staging and "backend: trainyard" in staging
    assert MOCK_PROVIDER in staging
    text = staging.replace("name: staging", "name: bad", 1).replace(
        'kubernetesVersion: "1.36.2"', f'kubernetesVersion: "{version}"'
    )
    return text.replace(MOCK_PROVIDER, INTERLINK_PROVIDER) if interlink else text


def _rendered(root: Path, folder: str) -> dict[str, dict[str, Any]]:
    path = root / "rendered" / "bad" / folder
    return {p.name: yaml.safe_load(p.read_text()) for p in sorted(path.rglob("*.yaml"))}


def test_overflow_and_quarantine_render_below_1_36_born_closed_and_required(tmp_path: Path) -> None:
    """Finding 1: overflow and health quarantine were refused below 1.36. Now the interLink
    node registers itself labelled and closed (NodeLabels/NodeTaints, no mutating policy),
    and inference pods without the quarantine toleration are refused, naming it."""
    root = rendered_repo(tmp_path, _staging_at("1.35.4", interlink=True))
    overflow = _rendered(root, "overflow")
    assert not [n for n in overflow if n.startswith("mutatingadmissionpolicy")], sorted(overflow)
    config_map = overflow["configmap-vk-mock.yaml"]
    config = yaml.safe_load(config_map["data"]["InterLinkConfig.yaml"])
    assert config["NodeLabels"] == ["trainyard.dev/provider=mock"]
    assert config["NodeTaints"] == [
        {"Key": "trainyard.dev/overflow-gate", "Value": "closed", "Effect": "NoSchedule"}
    ]
    priorities = _rendered(root, "priorities")
    assert "mutatingadmissionpolicy-trainyard-inference-quarantine-tolerations.yaml" not in priorities
    required = priorities[
        "validatingadmissionpolicy-trainyard-inference-quarantine-tolerations-required.yaml"
    ]
    (check,) = required["spec"]["validations"]
    assert "trainyard.dev/gpu-health" in check["expression"]
    assert check["message"].startswith(
        "inference pods tolerate the GPU quarantine taint trainyard.dev/gpu-health: add the toleration "
        "{key: trainyard.dev/gpu-health, operator: Exists, effect: NoSchedule} to the pod template"
    )
    binding = priorities[
        "validatingadmissionpolicybinding-trainyard-inference-quarantine-tolerations-required.yaml"
    ]
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"] == [
        "serving-staging"
    ]


def test_from_1_36_the_virtual_node_is_closed_by_policy_not_by_its_config(tmp_path: Path) -> None:
    root = rendered_repo(tmp_path, _staging_at("1.36.2", interlink=True))
    overflow = _rendered(root, "overflow")
    assert "mutatingadmissionpolicy-trainyard-virtual-node-labels.yaml" in overflow
    config = yaml.safe_load(overflow["configmap-vk-mock.yaml"]["data"]["InterLinkConfig.yaml"])
    assert "NodeTaints" not in config


def test_a_node_cli_provider_below_1_36_is_refused_at_its_type_with_a_fix(tmp_path: Path) -> None:
    """virtual-kubelet's node-cli (mock, azure-aci) registers one taint and no extra label
    (cmd/virtual-kubelet/internal/commands/root/root.go), so it cannot come up closed."""
    text = _staging_at("1.35.4", interlink=False)
    lines = text.splitlines()
    line = next(i for i, t in enumerate(lines) if t == "      type: mock") + 1
    assert refused(repo_with(tmp_path, text), "render", "bad")[0] == (
        f"environments/bad.yaml:{line}:13: error: provider 'mock' of type mock cannot come up closed on "
        "Kubernetes 1.35.4: its program registers one taint and no extra label, and 1.36 is the first "
        "minor whose MutatingAdmissionPolicy can add the gate taint and the provider label "
        "(overflow.providers[0].type); use type interlink (it registers them from its config), or set "
        "cluster.kubernetesVersion to 1.36 or newer"
    )


def _job_policy(root: Path, kind: str) -> dict[str, Any]:
    return _priorities(root)[f"validatingadmissionpolicy-trainyard-training-{kind}-priority.yaml"]


def test_below_1_36_a_classless_training_job_is_refused_at_every_kind(tmp_path: Path) -> None:
    """Finding 2: below 1.36 the job policies let a class-less pod template through, Kueue
    admitted the job, and every pod was refused. Each enabled kind now requires the class on
    every pod template of a job sent to a queue, and so does the Workload."""
    text = _at("1.35.4").replace(
        "teams:", "kueue: {integrations: [batch/job, jobset.x-k8s.io/jobset, ray.io/rayjob]}\nteams:"
    )
    root = rendered_repo(tmp_path, text)
    names = sorted(_priorities(root))
    assert [n for n in names if n.startswith("validatingadmissionpolicy-trainyard-training-")] == [
        "validatingadmissionpolicy-trainyard-training-job-priority.yaml",
        "validatingadmissionpolicy-trainyard-training-jobset-priority.yaml",
        "validatingadmissionpolicy-trainyard-training-priority.yaml",
        "validatingadmissionpolicy-trainyard-training-rayjob-priority.yaml",
        "validatingadmissionpolicy-trainyard-training-workload-tier.yaml",
    ]
    for kind, templates in (
        ("job", "[object.spec.template]"),
        ("jobset", "object.spec.replicatedJobs.map(r, r.template.spec.template)"),
    ):
        policy = _job_policy(root, kind)
        assert policy["spec"]["variables"] == [{"name": "templates", "expression": templates}]
        required = policy["spec"]["validations"][2]
        assert required["expression"] == (
            '!(has(object.metadata.labels) && "kueue.x-k8s.io/queue-name" in object.metadata.labels) || '
            "variables.templates.all(t, has(t.spec.priorityClassName) && t.spec.priorityClassName != '')"
        )
        assert "set priorityClassName: train on every pod template" in required["messageExpression"]
    workload = _priorities(root)["validatingadmissionpolicy-trainyard-training-workload-tier.yaml"]
    assert workload["spec"]["validations"][2]["expression"] == (
        "object.spec.podSets.all(p, has(p.template.spec.priorityClassName) && "
        "p.template.spec.priorityClassName != '')"
    )


def test_from_1_36_a_classless_job_is_not_refused(tmp_path: Path) -> None:
    root = rendered_repo(tmp_path, _at("1.36.2"))
    assert len(_job_policy(root, "job")["spec"]["validations"]) == 2
    workload = _priorities(root)["validatingadmissionpolicy-trainyard-training-workload-tier.yaml"]
    assert len(workload["spec"]["validations"]) == 2


@pytest.mark.slow
def test_validate_accepts_what_1_33_renders(tmp_path: Path) -> None:
    root = rendered_repo(tmp_path, _at("1.33.5"))
    code, out, err = run_cli(root, "validate", "bad")
    assert code == 0, out + err


def test_the_readme_states_the_range_the_code_enforces() -> None:
    from generators.upstream import kubernetes

    readme = (ROOT / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| Kubernetes |"))
    assert (kubernetes.OLDEST, kubernetes.NEWEST) == ((1, 32), (1, 37))
    assert "| 1.32 to 1.37 (" in row


@pytest.mark.parametrize("doc", ["scheduling.md", "adopting.md"])
def test_the_docs_version_table_is_the_mechanism_table(doc: str) -> None:
    """docs/scheduling.md and docs/adopting.md say which mechanism each minor gets; it must be
    what the code does."""
    from generators.upstream.kubernetes import Feature, mechanism, minors, name

    text = (ROOT / "docs" / doc).read_text()
    assert text.count("<!-- mechanisms -->") == 1
    table = text[text.index("<!-- mechanisms -->") :].split("\n\n", 1)[0].splitlines()[1:]
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    assert header == ["minor", *(f.value for f in Feature)]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table[2:]]
    expected = [[name(m), *(mechanism(f, f"{name(m)}.0").name for f in Feature)] for m in minors()]
    assert rows == expected
    assert rows[0][0] == "1.32" and rows[-1][0] == "1.37"
