"""docs/adopting.md is a contract: its environment snippets, joined in
order, are a heterogeneous environment (two tainted training GPU generations, an inference
pool with the usual GPU taint, interLink overflow, health on, the stack another team owns as
release `monitoring` in `observability`) that renders and validates clean
with real kubeconform, promtool and the policies; its helm commands are the ones the
rendered installer headers carry, in the README's order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.support import ROOT
from tests.support.recipes import header_command, helm_commands
from tests.support.scratch import run_cli, write_environment

GUIDE = ROOT / "docs" / "adopting.md"
MARKER = "<!-- adopting: environments/acme.yaml -->"


def guide_environment() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    snippets = re.findall(re.escape(MARKER) + r"\n```yaml\n(.*?)```", text, re.S)
    assert len(snippets) == text.count(MARKER) >= 5, "every marker is followed by a yaml block"
    return "".join(snippets)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("adopting")
    write_environment(root, "acme", guide_environment())
    (root / "rendered").mkdir()
    code, out, err = run_cli(root, "render", "acme")
    assert code == 0, out + err
    assert "warning" not in err, err  # the guide's caps sit under the reserves
    return root


def test_the_guides_environment_has_the_shape_it_promises() -> None:
    env = yaml.safe_load(guide_environment())
    pools = {p["name"]: p for p in env["pools"]}
    training = [p for p in pools.values() if p["role"] == "training"]
    assert {p["gpu"]["model"] for p in training} == {"GB200", "H100-SXM5-80GB"}
    assert {p["nodeLabels"]["kubernetes.io/arch"] for p in training} == {"arm64", "amd64"}
    usual = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    assert usual in pools["infer-h200"]["taints"]
    assert [p["type"] for p in env["overflow"]["providers"]] == ["interlink"]
    assert env["health"]["backend"] == "trainyard"
    # the platform team's stack, and no hard-coded Prometheus URL (the default follows it)
    assert (env["monitoring"]["release"], env["monitoring"]["namespace"]) == ("monitoring", "observability")
    assert "prometheusUrl" not in env["overflow"]["gate"]
    training_taint = {"key": "trainyard.dev/training", "value": "true", "effect": "NoSchedule"}
    assert all(training_taint in p["taints"] for p in training)  # GPU pods outside Kueue stay off


@pytest.mark.slow
def test_the_guides_environment_validates_clean(rendered: Path) -> None:
    code, out, err = run_cli(rendered, "validate", "acme")
    assert code == 0, out + err
    assert "0 findings" in out, out


def test_the_guides_environment_puts_both_generations_in_one_queue(rendered: Path) -> None:
    kueue = rendered / "rendered" / "acme" / "kueue"
    queue = yaml.safe_load((kueue / "clusterqueue-pretrain.yaml").read_text())
    assert [f["name"] for f in queue["spec"]["resourceGroups"][0]["flavors"]] == ["train-gb200", "train-h100"]
    flavor = yaml.safe_load((kueue / "resourceflavor-train-gb200.yaml").read_text())
    assert flavor["spec"]["nodeLabels"] == {
        "trainyard.dev/pool": "train-gb200",
        "kubernetes.io/arch": "arm64",
    }


def test_the_guides_helm_commands_are_the_rendered_headers_in_order(rendered: Path) -> None:
    installers = rendered / "rendered" / "acme" / "installers"
    expected = [
        header_command(installers / name)
        for name in ("kube-prometheus-stack-values.yaml", "gpu-operator-values.yaml", "kueue-values.yaml")
    ]
    section = GUIDE.read_text().split("## 5.", 1)[1].split("\n## ", 1)[0]
    assert helm_commands(section) == expected
