"""The Kueue controller Configuration: what is rendered, where it goes, who owns it.

Facts relied on (kueue v0.19.2 source, see docs/kueue.md): apis/config/v1beta2
configuration_types.go (WaitForPodsReady has no `enabled`), pkg/features/kube_features.go
(DisableWaitForPodsReady, deprecated), charts/kueue/values.yaml (managerConfig.
controllerManagerConfigYaml and its controller.groupKindConcurrency),
charts/kueue/templates/manager/manager.yaml (the config-checksum annotation).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from generators.components import kueue
from generators.diff.changes import compare
from generators.diff.objects import INSTALLER_INPUT, from_files
from generators.layout import environment_names
from generators.model.load import load
from generators.pipeline import render
from tests.support import CORPUS, ROOT, archive, tool
from tests.support.scratch import repo_with, run_cli
from tools.toolchain import PINS

SHIPPED = environment_names(ROOT)
VALUES = f"installers/{kueue.HELM_VALUES}"
TRAINJOB = "trainer.kubeflow.org/trainjob"
PYTORCHJOB = "kubeflow.org/pytorchjob"


def _files(root: Path, name: str) -> dict[str, render.RenderedFile]:
    return {f.path: f for f in render.render_tree(load(root, name))}


def _config_from_values(text: str) -> dict[str, Any]:
    values = yaml.safe_load(text)
    assert list(values) == ["enablePrometheus", "managerConfig"]
    # the chart's ServiceMonitor cannot carry the stack's release label: trainyard renders its own
    assert values["enablePrometheus"] is False
    assert list(values["managerConfig"]) == ["controllerManagerConfigYaml"]
    config: dict[str, Any] = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    return config


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_environments_hand_the_configuration_to_the_kueue_chart(name: str) -> None:
    files = _files(ROOT, name)
    assert VALUES in files and not files[VALUES].is_object
    # What Argo CD applies (and everything that reads objects) never sees it.
    assert VALUES not in {f.path for f in render.render_environment(load(ROOT, name))}
    # Nobody but the installer owns kueue-manager-config: no rendered object of that name.
    assert not [
        f for f in files.values() if f.is_object and f.obj["metadata"]["name"] == kueue.CONFIG_MAP_NAME
    ]
    text = (ROOT / "rendered" / name / VALUES).read_text(encoding="utf-8")
    assert text == files[VALUES].text
    assert text.startswith("# Helm values for the Kueue chart v0.19.2")
    assert "helm upgrade --install kueue" in text
    config = _config_from_values(text)
    assert (config["apiVersion"], config["kind"]) == ("config.kueue.x-k8s.io/v1beta2", "Configuration")
    assert "internalCertManagement" not in config  # the chart fills in its own webhook names
    frameworks = config["integrations"]["frameworks"]
    assert TRAINJOB in frameworks and PYTORCHJOB not in frameworks
    assert config["waitForPodsReady"]["timeout"] == "30m"  # always written out: always on


def _text(name: str) -> str:
    return (ROOT / "environments" / f"{name}.yaml").read_text(encoding="utf-8")


def _raw(name: str) -> dict[str, Any]:
    """The environment file itself, without its base or schema defaults."""
    document: dict[str, Any] = yaml.safe_load(_text(name))
    return document


def test_block_admission_is_decided_in_each_environment_file_with_its_reason() -> None:
    # The base only says who decides, it does not decide.
    assert "blockAdmission" not in _raw("_defaults")["kueue"].get("waitForPodsReady", {})
    decided = {}
    for name in SHIPPED:
        block = _raw(name)["kueue"]["waitForPodsReady"]["blockAdmission"]
        assert isinstance(block, bool), name
        text = _text(name)
        before_key = text[: text.rindex("\nkueue:")]
        reason = before_key[before_key.rindex("\n\n") :]
        assert f"# blockAdmission: {str(block).lower()}." in reason, (name, reason)
        assert load(ROOT, name).kueue.wait_for_pods_ready.block_admission is block
        decided[name] = block
    assert decided == {"dev": True, "staging": False, "prod": False}


@pytest.mark.parametrize("name", SHIPPED)
def test_unblocked_admission_only_where_training_pools_have_a_topology(name: str) -> None:
    """The reason given for false is topology-aware placement: it must hold."""
    env = load(ROOT, name)
    if not env.kueue.wait_for_pods_ready.block_admission:
        training = [p for p in env.pools if p.role == "training"]
        assert training and all(p.topology_levels for p in training), name


def _minimal_and(tmp_path: Path, extra: str) -> tuple[Path, Path]:
    """Two scratch repositories: the corpus' valid-minimal spec as it is, and with `extra`."""
    minimal = (CORPUS / "valid-minimal.yaml").read_text()
    (tmp_path / "minimal").mkdir()
    (tmp_path / "changed").mkdir()
    return repo_with(tmp_path / "minimal", minimal), repo_with(tmp_path / "changed", minimal + extra)


def test_enabled_true_is_accepted_and_changes_nothing(tmp_path: Path) -> None:
    plain, explicit = _minimal_and(tmp_path, "kueue:\n  waitForPodsReady: {enabled: true}\n")
    assert run_cli(plain, "render", "bad")[0] == 0
    assert run_cli(explicit, "render", "bad")[0] == 0
    values = [(root / "rendered" / "bad" / VALUES).read_text() for root in (plain, explicit)]
    assert values[0] == values[1]
    assert "blockAdmission: false" in values[0]  # the schema default is Kueue's own


def test_config_map_delivery_renders_the_same_configuration_as_a_configmap(tmp_path: Path) -> None:
    helm, manifests = _minimal_and(tmp_path, "kueue:\n  configurationDelivery: configMap\n")
    helm_files, map_files = _files(helm, "bad"), _files(manifests, "bad")
    assert VALUES in helm_files and VALUES not in map_files
    [config_map] = [
        f
        for f in map_files.values()
        if f.obj.get("kind") == "ConfigMap" and f.obj["metadata"]["name"] == kueue.CONFIG_MAP_NAME
    ]
    assert config_map.path == "kueue/kueue-system/configmap-kueue-manager-config.yaml"
    in_map = yaml.safe_load(config_map.obj["data"][kueue.CONFIG_KEY])
    assert in_map == _config_from_values(helm_files[VALUES].text)
    # Argo CD applies it then: it is in the project's whitelist as a namespaced kind.
    [project] = [
        f.obj
        for f in map_files.values()
        if f.obj.get("kind") == "AppProject" and f.obj["metadata"]["name"] == "trainyard-bad"
    ]
    assert {"group": "", "kind": "ConfigMap"} in project["spec"]["namespaceResourceWhitelist"]


def test_a_stale_values_file_is_reported_by_render_check_and_validate(repo_copy: Path) -> None:
    values = repo_copy / "rendered" / "dev" / VALUES
    values.write_text(values.read_text().replace("blockAdmission: true", "blockAdmission: false"))
    code, out, _ = run_cli(repo_copy, "render", "dev", "--check")
    assert (code, out) == (1, f"rendered/dev/{VALUES}: stale\n")
    code, out, _ = run_cli(repo_copy, "validate", "dev")
    assert code == 1
    assert f"rendered/dev/{VALUES}: stale: differs from what environments/dev.yaml renders" in out, out
    assert "kubeconform" not in out.split("dev: ")[0], out  # never handed to kubeconform


def test_diff_shows_a_values_change_as_one_field() -> None:
    path = f"rendered/dev/{VALUES}"
    before = (ROOT / path).read_bytes()
    after = before.replace(b"blockAdmission: true", b"blockAdmission: false")
    [change] = compare(from_files({path: before}), from_files({path: after}))
    assert change.action == "changed" and change.key.kind == INSTALLER_INPUT
    assert change.key.name == kueue.HELM_VALUES and change.path == path
    [field] = change.fields
    assert field.path == ("managerConfig", "controllerManagerConfigYaml")
    assert "blockAdmission: false" in field.after and "blockAdmission: true" in field.before


def _chart_values() -> str:
    """values.yaml of the pinned Kueue chart archive (kueue-0.19.2.tgz, verified by
    tools/toolchain.py), as the pinned helm reads it. Missing helm or archive is a failure
    with the install command, never a skip: CI and `make test` provision both."""
    helm, chart = tool("helm"), archive(f"kueue-{PINS['kueue'].lstrip('v')}.tgz")
    done = subprocess.run(
        [str(helm), "show", "values", str(chart)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_group_kind_concurrency_is_upstreams_verbatim() -> None:
    """The values fragment replaces the chart's default configuration whole, so upstream's
    controller.groupKindConcurrency is written out; it must be exactly the pinned chart's."""
    manager_config = yaml.safe_load(_chart_values())["managerConfig"]
    chart = yaml.safe_load(manager_config["controllerManagerConfigYaml"])
    for name in SHIPPED:
        ours = _config_from_values(_files(ROOT, name)[VALUES].text)
        assert ours["controller"] == chart["controller"], name
        # Where ours differs from the chart's defaults, it is on purpose (docs/kueue.md).
        assert set(ours) - set(chart) <= {"namespace", "manageJobsWithoutQueueName", "waitForPodsReady"}, name
