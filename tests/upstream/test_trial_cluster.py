"""The trial's cluster (tests/corpus/trial.yaml): the shape most labs run today renders and
validates with overflow and quarantine on.

Kubernetes 1.35 (no MutatingAdmissionPolicy), Jobs, JobSets, TrainJobs and RayJobs as
Kueue integrations, the monitoring stack another team owns as release `monitoring` in
`observability`, an AMD pool (MI300X, `amd.com/gpu`), H200 and GB200 (arm64) training pools,
L40S serving, an interLink provider. What each minor gets is generators/upstream/kubernetes.py;
here the expected objects and values are literals of the trial file and of the version table
in docs/scheduling.md (1.35: REQUIRE, REQUIRE, WARN, PROVIDER).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import CORPUS
from tests.support.scratch import run_cli, write_environment

TRIAL = CORPUS / "trial.yaml"
AMD_WARNING = "warning: pool 'train-mi300x' (amd.com/gpu) shows on no panel"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("trial")
    write_environment(root, "trial", TRIAL.read_text(encoding="utf-8"))
    (root / "rendered").mkdir()
    code, out, err = run_cli(root, "render", "trial")
    assert code == 0, out + err
    return root, err


def _objects(root: Path) -> dict[str, dict[str, Any]]:
    """Every rendered file of the trial (objects, and installers/' chart values), keyed by its
    path under rendered/trial."""
    base = root / "rendered" / "trial"
    return {p.relative_to(base).as_posix(): yaml.safe_load(p.read_text()) for p in base.rglob("*.yaml")}


def test_it_renders_with_one_warning_the_amd_pool_on_no_gpu_dashboard(rendered: tuple[Path, str]) -> None:
    _, err = rendered
    warnings = [line for line in err.splitlines() if ": warning: " in line]
    assert len(warnings) == 1 and AMD_WARNING in warnings[0], err


@pytest.mark.slow
def test_it_validates_clean_with_kubeconform_and_the_policies(rendered: tuple[Path, str]) -> None:
    root, _ = rendered
    code, out, err = run_cli(root, "validate", "trial")
    assert code == 0, out + err
    assert "0 findings (0 errors, 0 warnings)" in out, out
    # every object the render wrote (installers/ are chart values, not objects) passed kubeconform
    assert re.search(r"trial: (\d+) objects, .*; kubeconform \1/\1 valid;", out), out


def test_at_1_35_no_mutating_policy_is_rendered_and_the_virtual_node_closes_itself(
    rendered: tuple[Path, str],
) -> None:
    """PROVIDER: interLink registers its node labelled and closed from its config."""
    root, _ = rendered
    objects = _objects(root)
    assert not [name for name, obj in objects.items() if "Mutating" in obj.get("kind", "")]
    config = yaml.safe_load(
        objects["overflow/trainyard-system/configmap-vk-slurm.yaml"]["data"]["InterLinkConfig.yaml"]
    )
    assert config["NodeLabels"] == ["trainyard.dev/provider=slurm"]
    assert config["NodeTaints"] == [
        {"Effect": "NoSchedule", "Key": "trainyard.dev/overflow-gate", "Value": "closed"}
    ]
    assert config["Resources"]["Accelerators"] == [
        {"Available": "8", "Model": "L40S-48GB", "ResourceType": "nvidia.com/gpu"}
    ]


def test_quarantine_watches_the_nvidia_training_pools_and_inference_must_tolerate_it(
    rendered: tuple[Path, str],
) -> None:
    root, _ = rendered
    objects = _objects(root)
    policy = yaml.safe_load(
        objects["health/trainyard-system/configmap-gpu-health-policy.yaml"]["data"]["policy.yaml"]
    )
    watched = [p["nodeSelector"]["matchLabels"]["trainyard.dev/pool"] for p in policy["spec"]["pools"]]
    assert watched == ["train-h200", "train-gb200"]  # not train-mi300x: dcgm-exporter cannot see it
    required = objects[
        "priorities/validatingadmissionpolicy-trainyard-inference-quarantine-tolerations-required.yaml"
    ]
    assert required["kind"] == "ValidatingAdmissionPolicy"


def test_every_workload_kind_gets_the_class_check_and_the_topology_warning(
    rendered: tuple[Path, str],
) -> None:
    """REQUIRE and WARN per enabled kind; a TrainJob has no template of its own, so its check
    is the Workload's (generators/upstream/job_kinds.py)."""
    root, _ = rendered
    objects = _objects(root)
    kueue = yaml.safe_load(
        objects["installers/kueue-values.yaml"]["managerConfig"]["controllerManagerConfigYaml"]
    )
    assert kueue["integrations"]["frameworks"] == [
        "batch/job",
        "jobset.x-k8s.io/jobset",
        "trainer.kubeflow.org/trainjob",
        "ray.io/rayjob",
    ]
    names = set(objects)
    for kind in ("job", "jobset", "rayjob"):
        assert f"priorities/validatingadmissionpolicy-trainyard-training-{kind}-priority.yaml" in names
        warn = objects[f"kueue/validatingadmissionpolicybinding-trainyard-default-topology-{kind}.yaml"]
        assert warn["spec"]["validationActions"] == ["Warn"]
    assert "priorities/validatingadmissionpolicy-trainyard-training-workload-tier.yaml" in names
    assert "priorities/validatingadmissionpolicy-trainyard-training-trainjob-priority.yaml" not in names


def test_the_other_teams_stack_selects_everything_we_render(rendered: tuple[Path, str]) -> None:
    """Release `monitoring` in `observability`: every ServiceMonitor and PrometheusRule carries
    its selector label, the rules sit in its namespace, the gate asks its Prometheus."""
    root, _ = rendered
    objects = _objects(root)
    monitors = {n: o for n, o in objects.items() if o.get("kind") in ("ServiceMonitor", "PrometheusRule")}
    assert len(monitors) >= 4, sorted(monitors)
    for name, obj in monitors.items():
        assert obj["metadata"]["labels"].get("release") == "monitoring", name
    assert {o["metadata"]["namespace"] for o in monitors.values() if o["kind"] == "PrometheusRule"} == {
        "observability"
    }
    gate = objects["overflow/trainyard-system/configmap-overflow-gate-policy.yaml"]["data"]
    assert "http://prometheus-operated.observability.svc:9090" in next(iter(gate.values()))
