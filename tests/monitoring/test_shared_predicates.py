"""Alert, quarantine condition and dashboard agree on what a hot GPU is.

generators/model/promql.py defines "a GPU above monitoring.gpuTempLimitCelsius, ignoring
DCGM placeholders" once; GPUTemperatureHigh aggregates it per GPU, the gpu-temperature
condition of the NodeHealthPolicy per node, the GPU hardware dashboard counts it. Here the
three rendered expressions (read from rendered/, not from the generator) are evaluated by
promtool over the same readings: one GPU above the limit, one at it, one reading a DCGM
placeholder and one at the plausibility cutoff. Each must see exactly the hot GPU, so a
second definition that drifted (a `>=`, a forgotten placeholder guard) fails here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring.alert_cases import DCGM_PLACEHOLDER, Builder, series
from tests.monitoring.conftest import load_shipped
from tests.monitoring.rendered_views import QUARANTINING, all_rules, dashboards, panels, policy, run

EVAL_MINUTES = 5


def _expressions(env: str) -> tuple[dict[str, Any], dict[str, str]]:
    shipped = load_shipped(env)
    limit = shipped.spec["monitoring"]["gpuTempLimitCelsius"]
    [alert] = [r["expr"] for r in all_rules(shipped) if r.get("alert") == "GPUTemperatureHigh"]
    spec = policy(env)["spec"]
    assert isinstance(spec, dict)
    conditions = spec["conditions"]
    [condition] = [c["query"] for c in conditions if c["reason"] == "gpu-temperature"]
    board = next(b for b in dashboards(shipped) if b["uid"].endswith("-gpu-hardware"))
    [panel] = [p for p in panels(board) if p["title"] == f"GPUs above {limit} °C"]
    count = panel["targets"][0]["expr"].replace("$host", ".*")  # every host, as Grafana's "All"
    return shipped.spec, {"alert": alert, "condition": condition, "dashboard": count}


@pytest.mark.parametrize("env", QUARANTINING)
def test_alert_condition_and_dashboard_see_the_same_hot_gpu(env: str, promtool: Path, tmp_path: Path) -> None:
    spec, exprs = _expressions(env)
    b = Builder(spec)
    limit = spec["monitoring"]["gpuTempLimitCelsius"]
    cutoff = spec["monitoring"]["gpuTempPlausibleMaxCelsius"]
    readings = [
        (b.gpu("node-a", 0), limit + 1),  # the one hot GPU
        (b.gpu("node-a", 1), limit),  # at the limit is not above it
        (b.gpu("node-b", 0), DCGM_PLACEHOLDER),  # "no value", not a temperature
        (b.gpu("node-c", 0), cutoff),  # at the cutoff: a placeholder too
    ]
    hot = b.gpu("node-a", 0)
    expected = {
        "alert": [{"labels": series("", {k: hot[k] for k in (b.host, "gpu", "UUID")}), "value": limit + 1}],
        "condition": [{"labels": '{node="node-a"}', "value": limit + 1}],
        "dashboard": [{"labels": "{}", "value": 1}],
    }
    test = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "name": f"{env}: one hot GPU",
                "interval": "1m",
                "input_series": [
                    {"series": series("DCGM_FI_DEV_GPU_TEMP", labels), "values": f"{value}x{EVAL_MINUTES}"}
                    for labels, value in readings
                ],
                "promql_expr_test": [
                    {"expr": exprs[name], "eval_time": f"{EVAL_MINUTES}m", "exp_samples": samples}
                    for name, samples in expected.items()
                ],
            }
        ],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    result = run([str(promtool), "test", "rules", "tests.yaml"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def _with_ports_panel() -> list[str]:
    return [
        env
        for env in QUARANTINING
        if any(p["title"] == "Ports not active" for b in dashboards(load_shipped(env)) for p in panels(b))
    ]


@pytest.mark.parametrize("env", _with_ports_panel())
def test_ports_not_active_panel_counts_the_ports_the_alert_names(
    env: str, promtool: Path, tmp_path: Path
) -> None:
    """The fabric dashboard's "Ports not active" counts what InfiniBandPortNotActive names: a
    port not ACTIVE, or ACTIVE without its physical link up (the panel once counted only the
    first)."""
    shipped = load_shipped(env)
    [alert] = [r["expr"] for r in all_rules(shipped) if r.get("alert") == "InfiniBandPortNotActive"]
    [panel] = [p for b in dashboards(shipped) for p in panels(b) if p["title"] == "Ports not active"]
    count = panel["targets"][0]["expr"].replace("$host", ".*")
    b = Builder(shipped.spec)
    # (state_id, physical_state_id): 4 = ACTIVE, 5 = LinkUp (the kernel's ib sysfs codes)
    ports = {"mlx5_0": (4, 5), "mlx5_1": (1, 5), "mlx5_2": (4, 3), "mlx5_3": (2, 2)}
    inputs = [
        {"series": series(name, b.ib_port(device)), "values": f"{value}x{EVAL_MINUTES}"}
        for device, states in ports.items()
        for name, value in zip(
            ("node_infiniband_state_id", "node_infiniband_physical_state_id"), states, strict=True
        )
    ]
    down = {"mlx5_1": 1, "mlx5_2": 3, "mlx5_3": 2}  # the value the first true side carries
    port_labels = {k: v for k, v in b.ib_port().items() if k not in ("job", "device")}
    expected = {
        "alert": [
            {"labels": series("", {**port_labels, "device": device}), "value": value}
            for device, value in sorted(down.items())
        ],
        "dashboard": [{"labels": "{}", "value": len(down)}],
    }
    test = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [
            {
                "name": f"{env}: three ports down, one healthy",
                "interval": "1m",
                "input_series": inputs,
                "promql_expr_test": [
                    {
                        "expr": {"alert": alert, "dashboard": count}[name],
                        "eval_time": f"{EVAL_MINUTES}m",
                        "exp_samples": samples,
                    }
                    for name, samples in expected.items()
                ],
            }
        ],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(test, sort_keys=False))
    result = run([str(promtool), "test", "rules", "tests.yaml"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
