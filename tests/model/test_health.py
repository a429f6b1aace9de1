"""The health model (generators/model/health.py) and the shipped decisions it encodes."""

from __future__ import annotations

import pytest

from generators.model.health import CONDITIONS, TAINT_KEY, build_health
from generators.model.load import load
from tests.support import ROOT


def test_backend_none_renders_nothing_and_is_the_default() -> None:
    from generators.spec.schema import apply_defaults  # defaults come from the schema only

    env = load(ROOT, "staging")
    defaults = apply_defaults({"health": {}})["health"]
    assert defaults["backend"] == "none"
    assert build_health(defaults, env.pools, env.monitoring) is None


@pytest.mark.parametrize("name", ["staging", "prod"])
def test_shipped_caps_stay_within_each_pools_reserve(name: str) -> None:
    """The decision written in staging.yaml and prod.yaml: quarantine never leaves quota
    promising GPUs that are not there, and every pool can reach its cap at once."""
    env = load(ROOT, name)
    assert env.health is not None and env.health.controller is not None
    c = env.health.controller
    for pool in c.pools:
        assert 1 <= c.cap.pool_cap(pool) <= pool.reserve_nodes, pool.name
    assert c.cap.max_nodes == sum(c.cap.pool_cap(p) for p in c.pools)


def test_default_pools_are_training_and_shared() -> None:
    staging = load(ROOT, "staging")
    assert staging.health is not None and staging.health.controller is not None
    assert [p.name for p in staging.health.controller.pools] == [
        p.name for p in staging.pools if p.role in ("training", "shared")
    ]


def test_conditions_follow_the_monitoring_thresholds() -> None:
    env = load(ROOT, "prod")
    assert env.health is not None and env.health.controller is not None
    m = env.monitoring
    queries = {c.reason: c.query for c in env.health.controller.conditions}
    assert [c.reason for c in env.health.controller.conditions] == [kind.reason for kind in CONDITIONS]
    assert queries["gpu-temperature"].endswith(f"> {m.gpu_temp_limit_celsius}")
    assert f'"node", "$1", "{m.host_label}"' in queries["gpu-temperature"]
    assert "|".join(map(str, m.xid_replace_codes)) in queries["xid"]
    assert queries["nvlink"].endswith(f"> {m.alerts.nvlink_errors_per_window}")
    assert f'"node", "$1", "{m.node_exporter_host_label}"' in queries["infiniband-port-down"]
    assert queries["infiniband-link-errors"].endswith(f"> {m.alerts.infiniband_errors_per_window}")
    windowed = ("xid", "nvlink", "infiniband-link-errors")
    assert all(f"[{m.alerts.error_window}]" in queries[r] for r in windowed)


def test_each_condition_names_its_alert_and_reason() -> None:
    """The alert and reason each condition renders (docs/health.md's runbooks), as literals."""
    prod = load(ROOT, "prod").health
    assert prod is not None and prod.controller is not None
    assert [(c.spec_key, c.reason, c.alert) for c in prod.controller.conditions] == [
        ("gpuTemperature", "gpu-temperature", "GpuHealthGpuTemperature"),
        ("xid", "xid", "GpuHealthXid"),
        ("nvlinkErrors", "nvlink", "GpuHealthNvlinkErrors"),
        ("infinibandPortDown", "infiniband-port-down", "GpuHealthInfinibandPortDown"),
        ("infinibandLinkErrors", "infiniband-link-errors", "GpuHealthInfinibandLinkErrors"),
    ]


def test_tolerations_per_backend() -> None:
    assert [t.key for t in load(ROOT, "prod").health.tolerations] == [TAINT_KEY]  # type: ignore[union-attr]
    dev = load(ROOT, "dev").health
    assert dev is not None and dev.controller is None
    assert [(t.key, t.effect) for t in dev.tolerations] == [
        ("nvidia.com/gpu-xid-error", "NoSchedule"),
        ("nvidia.com/gpu-nvlink-error", "NoSchedule"),
    ]


def test_the_free_gpu_query_tolerates_the_quarantine_keys() -> None:
    for name in ("staging", "prod"):
        ov = load(ROOT, name).overflow
        assert ov is not None and f'key!="{TAINT_KEY}"' in ov.gate.free_gpus_query
