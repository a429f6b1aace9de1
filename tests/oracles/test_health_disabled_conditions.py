"""A quarantine condition the spec turns off (`health.conditions.<name>.enabled: false`): the
controller never quarantines for it, its alert still fires and says so, and a node bad only
by it is "healthy" for the release alert.

Spec (below): pool `train` of 10 nodes watched by the built-in controller,
gpuTemperature disabled, every other condition at its default (enabled), releaseAfterSeconds
600, reconcileIntervalSeconds 30, GPU temperature limit 85 °C. Worked out by hand:
- the rendered NodeHealthPolicy lists xid, nvlink, infiniband-port-down,
  infiniband-link-errors: the schema's condition order without gpu-temperature;
- a node hot from t=0 is never quarantined (the gate program reads that policy), while a
  node with an XID at t=0 is at once (xid: quarantineAfterSeconds 0);
- GpuHealthNotReleased waits 600 + 2 x 30 = 660 s = 11 minutes: a quarantined node that is
  hot (bad only by the disabled condition) fires it at 11m, not at 10m.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml
from trainyard_gate.health.policy import parse
from trainyard_gate.health.state import HealthState
from trainyard_gate.runtime.nodes import NodeTaints

from generators.model.build import build
from generators.model.load import load_environment
from generators.pipeline import render
from tests.monitoring.alert_cases import Builder, Case, Expect, promtool_tests, series
from tests.oracles.spec import NAME, oracle_spec
from tests.support import tool
from tests.support.scratch import write_environment

SPEC = oracle_spec("""\
pools:
  - {name: train, role: training, gpu: {model: H100, perNode: 8}, nodes: 10, reserveNodes: 2, cpu: 96,
     memory: 1000Gi, nodeLabels: {trainyard.dev/pool: train}}
teams:
  - name: alpha
    namespaces: [alpha]
    shares: {train: 100}
monitoring:
  gpuTempLimitCelsius: 85
health:
  backend: trainyard
  image: {repository: ghcr.io/example/trainyard-gate, tag: 0.1.0}
  reconcileIntervalSeconds: 30
  releaseAfterSeconds: 600
  cap: {maxNodes: 2, maxPercentOfPool: 20}
  conditions:
    gpuTemperature: {enabled: false, quarantineAfterSeconds: 300}
""")


def rendered(tmp_path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The environment's spec (schema defaults applied) and every rendered object."""
    write_environment(tmp_path, NAME, SPEC)
    _, spec = load_environment(tmp_path, NAME)
    env = build(spec, f"environments/{NAME}.yaml")
    return spec, [yaml.safe_load(f.text) for f in render.render_tree(env)]


def named(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    [found] = [o for o in objects if o.get("kind") == kind and o["metadata"]["name"] == name]
    return found


def rules(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    [rule] = [o for o in objects if o.get("kind") == "PrometheusRule"]
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


def test_the_controller_never_quarantines_for_a_disabled_condition(tmp_path: Path) -> None:
    _, objects = rendered(tmp_path)
    text = named(objects, "ConfigMap", "gpu-health-policy")["data"]["policy.yaml"]
    policy = parse(text, "policy.yaml")
    assert [c["reason"] for c in yaml.safe_load(text)["spec"]["conditions"]] == [
        "xid",
        "nvlink",
        "infiniband-port-down",
        "infiniband-link-errors",
    ]
    state = HealthState(policy)
    nodes = {"train": [NodeTaints(f"n{i}", "1", (), {"trainyard.dev/pool": "train"}) for i in range(10)]}
    wall = 1_800_000_000
    for now in (0, 300, 600, 3600):  # n1 hot throughout, n2 with an XID from t=0
        state.observe(
            now, wall + now, nodes, {"gpu-temperature": frozenset({"n1"}), "xid": frozenset({"n2"})}
        )
    assert sorted(state.quarantined) == ["n2"]


def test_the_alert_of_a_disabled_condition_says_nobody_quarantines(tmp_path: Path) -> None:
    _, objects = rendered(tmp_path)
    alerts = {r["alert"]: r for r in rules(objects) if "alert" in r}
    hot = alerts["GpuHealthGpuTemperature"]["annotations"]["description"]
    assert "health.conditions.gpuTemperature is disabled: nobody quarantines it" in hot
    assert "the health controller quarantines it" not in hot
    xid = alerts["GpuHealthXid"]["annotations"]["description"]
    assert "the health controller quarantines it (taint trainyard.dev/gpu-health=xid)" in xid


def test_a_node_bad_only_by_a_disabled_condition_is_not_released_alert(tmp_path: Path) -> None:
    spec, objects = rendered(tmp_path)
    b = Builder(spec)
    quarantined = series(
        "trainyard_health_quarantined",
        {
            "job": "gpu-health",
            "namespace": "trainyard-system",
            "node": "node-a",
            "pool": "train",
            "reason": "xid",
        },
    )
    hot = series("DCGM_FI_DEV_GPU_TEMP", b.gpu("node-a"))
    inputs = [(quarantined, "1x30"), (hot, "95x30")]
    fired = [Expect({"node": "node-a", "pool": "train", "severity": "warning"})]
    cases = [
        Case("GpuHealthNotReleased", "hot, but temperature is disabled: 11 minutes", inputs, 11, fired),
        Case("GpuHealthNotReleased", "one minute less", inputs, 10),
    ]
    all_rules = rules(objects)
    (tmp_path / "rules.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "health", "rules": all_rules}]}, sort_keys=False)
    )
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(promtool_tests(cases, all_rules, "rules.yaml")))
    done = subprocess.run(
        [str(tool("promtool")), "test", "rules", "tests.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
