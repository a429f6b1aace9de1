"""`box up ENV --speed X`: the spec's controller durations divided, the copy rendered.

Expected values are staging's durations (environments/staging.yaml and the schema defaults
it leaves alone) divided by hand, written as literals; what is read is the rendered
configuration the box's controllers load, never the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from box import adapter
from box.scale import scaled_checkout
from box.speed import SpeedError, seconds_of
from generators.model.load import load
from generators.pipeline.render import objects, render_tree
from tests.support import ROOT


def _config(rendered: list[dict[str, Any]], name: str, key: str) -> Any:
    [config_map] = [o for o in rendered if o["kind"] == "ConfigMap" and o["metadata"]["name"] == name]
    return yaml.safe_load(config_map["data"][key])


def _rendered(tmp_path: Path, speed: int, scale: int = 1) -> list[dict[str, Any]]:
    copy = scaled_checkout(ROOT, "staging", scale, tmp_path / "copy", speed)
    return objects(render_tree(load(copy, "staging")))


def test_staging_at_speed_10_divides_every_controller_duration(tmp_path: Path) -> None:
    rendered = _rendered(tmp_path, 10)
    gate = _config(rendered, "overflow-gate-policy", "policy.yaml")
    text = yaml.safe_dump(gate)
    # staging: closeAfterSeconds 300, openAfterSeconds 30, reconcile 30 (default)
    assert "closeAfterSeconds: 30\n" in text and "openAfterSeconds: 3\n" in text
    assert "reconcileIntervalSeconds: 3\n" in text
    descheduler = yaml.safe_dump(_config(rendered, "descheduler", "policy.yaml"))
    assert "minPodAge: 30s" in descheduler  # 5m / 10
    health = yaml.safe_dump(_config(rendered, "gpu-health-policy", "policy.yaml"))
    assert "quarantineAfterSeconds: 30\n" in health  # gpuTemperature 300 / 10
    assert "quarantineAfterSeconds: 0\n" in health  # xid: on first sight stays on first sight
    assert "releaseAfterSeconds: 180\n" in health  # 1800 / 10
    # 30 / 10 = 3, below the schema's minimum of 5 for health.reconcileIntervalSeconds
    assert "reconcileIntervalSeconds: 5\n" in health


def test_speed_keeps_node_counts_and_scale_keeps_durations(tmp_path: Path) -> None:
    sped = load(scaled_checkout(ROOT, "staging", 1, tmp_path / "a", 20), "staging")
    assert {p.name: p.nodes for p in sped.pools} == {"train-h100": 32, "infer-l40s": 8}
    scaled = _rendered(tmp_path / "b", 1, scale=4)
    assert "closeAfterSeconds: 300\n" in yaml.safe_dump(
        _config(scaled, "overflow-gate-policy", "policy.yaml")
    )


def test_an_alert_window_never_drops_below_four_scrapes(tmp_path: Path) -> None:
    rendered = _rendered(tmp_path, 100)
    [rules] = [o for o in rendered if o["metadata"]["name"] == "trainyard-alerts-rules-file"]
    text = "".join(rules["data"].values())
    # errorWindow 10m / 100 = 6 s, raised to 20 s, in the XID alert and the health conditions
    xid = 'DCGM_EXP_XID_ERRORS_COUNT{job=\\"nvidia-dcgm-exporter\\", xid=~\\"48|63|64|74|79|94|95\\"}'
    assert f"{xid}[20s]" in text
    health = yaml.safe_dump(_config(rendered, "gpu-health-policy", "policy.yaml"), width=10_000)
    assert "[20s]" in health and "[10m]" not in health


def test_durations_read_as_go_and_prometheus_write_them() -> None:
    assert seconds_of("1h30m") == 5400 and seconds_of("90s") == 90 and seconds_of("2m") == 120
    with pytest.raises(SpeedError):
        seconds_of("5 minutes")


def test_the_cli_refuses_a_speed_below_one(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from box.state import BOX_DIR_ENV

    done = subprocess.run(
        [sys.executable, str(ROOT / "generate.py"), "box", "up", "staging", "--speed", "0"],
        capture_output=True,
        text=True,
        env={**os.environ, BOX_DIR_ENV: str(tmp_path)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "--speed must be a positive integer" in done.stderr


def _flag(argv: list[str], name: str) -> str | None:
    """The value pflag keeps: the last `--name=value`."""
    values = [a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")]
    return values[-1] if values else None


@pytest.mark.parametrize(
    ("speed", "relist", "max_age"),
    [
        pytest.param(1, "1m", None, id="speed-1-as-rendered"),
        pytest.param(10, "6s", "60s", id="speed-10"),
        # 60 / 30 = 2 s is below the box Prometheus's 5 s scrape interval (box/monitoring.py)
        pytest.param(30, "5s", "60s", id="speed-30-floor"),
    ],
)
def test_the_adapter_relists_sped_up_and_still_looks_back_a_minute(
    tmp_path: Path, speed: int, relist: str, max_age: str | None
) -> None:
    """The box's prometheus-adapter at `--speed X`: the rendered relist period (1m, upstream's
    deploy/manifests) divided, each relist still looking back the minute it did."""
    rendered = objects(render_tree(load(ROOT, "staging")))
    deployment = adapter.deployment_of(rendered)
    assert deployment is not None
    daemon = adapter.host_process(
        deployment, rendered, tmp_path / "kubeconfig", tmp_path / "adapter", {}, speed
    )
    assert _flag(daemon.argv, "metrics-relist-interval") == relist
    assert _flag(daemon.argv, "metrics-max-age") == max_age
