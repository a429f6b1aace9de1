"""The default topology of a topology queue, for every job kind Kueue reads topology
annotations from (generators/components/kueue.py, generators/upstream/job_kinds.py).

Before: only batch/jobs got a MutatingAdmissionPolicy, JobSets, TrainJobs (JobSets) and
RayJobs scattered, and the policy matched batch/jobs even when batch/job was not an enabled
integration. Expected values are literals of staging (topology levels, queues, namespaces).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.support import ROOT
from tests.support.scratch import rendered_repo


def _staging(version: str = "1.36.2", integrations: str = "") -> str:
    """staging renamed `bad` at `version`; its mock provider cannot come up closed below 1.36
    (tests/upstream/test_kubernetes.py), so the copy's provider is interLink."""
    text = (ROOT / "environments" / "staging.yaml").read_text().replace("name: staging", "name: bad", 1)
    mock = "      type: mock\n"
    assert mock in text and 'config: {cpu: "64", memory: 512Gi, pods: "110"}' in text
    text = text.replace(mock, "      type: interlink\n").replace(
        'config: {cpu: "64", memory: 512Gi, pods: "110"}',
        'config: {InterlinkURL: "https://interlink.example.org"}',
    )
    text = text.replace('kubernetesVersion: "1.36.2"', f'kubernetesVersion: "{version}"')
    if integrations:
        assert "\nkueue:\n" in text
        text = text.replace("\nkueue:\n", f"\nkueue:\n  integrations: {integrations}\n", 1)
    return text


def _kueue(root: Path) -> dict[str, dict[str, Any]]:
    folder = root / "rendered" / "bad" / "kueue"
    return {p.name: yaml.safe_load(p.read_text()) for p in sorted(folder.glob("*.yaml"))}


def _policies(files: dict[str, dict[str, Any]], prefix: str) -> list[str]:
    return [n for n in files if n.startswith(prefix) and "default-topology" in n]


def test_jobsets_get_the_default_topology_and_only_enabled_kinds_are_matched(tmp_path: Path) -> None:
    root = rendered_repo(tmp_path, _staging(integrations="[jobset.x-k8s.io/jobset]"))
    files = _kueue(root)
    assert _policies(files, "mutatingadmissionpolicy-") == [
        "mutatingadmissionpolicy-trainyard-default-topology-evals-jobset.yaml",
        "mutatingadmissionpolicy-trainyard-default-topology-foundation-jobset.yaml",
        "mutatingadmissionpolicy-trainyard-default-topology-research-jobset.yaml",
    ]
    policy = files["mutatingadmissionpolicy-trainyard-default-topology-foundation-jobset.yaml"]
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert [(r["apiGroups"], r["resources"]) for r in rules] == [(["jobset.x-k8s.io"], ["jobsets"])]
    (mutation,) = policy["spec"]["mutations"]
    assert mutation["patchType"] == "JSONPatch"
    expression = mutation["jsonPatch"]["expression"]
    assert "'/spec/replicatedJobs/' + string(object.spec.replicatedJobs.indexOf(r))" in expression
    assert '"kueue.x-k8s.io~1podset-preferred-topology", value: "topology.trainyard.dev/rack"' in expression


def test_rayjobs_get_it_on_the_head_and_each_worker_group(tmp_path: Path) -> None:
    root = rendered_repo(tmp_path, _staging(integrations="[ray.io/rayjob]"))
    policy = _kueue(root)["mutatingadmissionpolicy-trainyard-default-topology-foundation-rayjob.yaml"]
    expression = policy["spec"]["mutations"][0]["jsonPatch"]["expression"]
    assert "\"/spec/rayClusterSpec/headGroupSpec/template\" + '/metadata'" in expression
    assert "'/spec/rayClusterSpec/workerGroupSpecs/' + string(" in expression


def test_below_1_36_a_gang_without_topology_is_warned_naming_the_annotation(tmp_path: Path) -> None:
    root = rendered_repo(tmp_path, _staging("1.35.4"))
    files = _kueue(root)
    assert _policies(files, "mutatingadmissionpolicy") == []
    assert _policies(files, "validatingadmissionpolicy-") == [
        "validatingadmissionpolicy-trainyard-default-topology-job.yaml",
        "validatingadmissionpolicy-trainyard-default-topology-jobset.yaml",
    ]
    binding = files["validatingadmissionpolicybinding-trainyard-default-topology-jobset.yaml"]
    assert binding["spec"]["validationActions"] == ["Warn"]
    namespaces = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"]
    assert namespaces == ["evals", "foundation", "research"]
    message = files["validatingadmissionpolicy-trainyard-default-topology-jobset.yaml"]["spec"][
        "validations"
    ][0]["messageExpression"]
    assert "add the annotation kueue.x-k8s.io/podset-preferred-topology: ' + {" in message
    assert "spec.replicatedJobs[*].template.spec.template" in message
