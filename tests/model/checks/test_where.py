"""generators/model/checks/where.py: a check names a setting by its model field and reports
at the spec path fromspec maps that field from. Expected paths are the schema's keys, written
out here."""

from __future__ import annotations

import pytest

from generators.model.checks.where import item, section
from generators.model.environment import Environment
from generators.model.fromspec import spec_path
from generators.model.health import Cap, Controller, Health
from generators.model.overflow import InferenceService, Overflow
from generators.model.types import KueueOptions, Pool, Preemption, Team, Tier


def test_a_field_is_found_at_its_key() -> None:
    assert item("pools", 2, Pool, "reserve_nodes") == ("pools", 2, "reserveNodes")
    assert item("pools", 0, Pool, "gpu_resource") == ("pools", 0, "gpu", "resource")
    assert item("pools", 1, Pool, "topology_levels") == ("pools", 1, "topology", "levels")
    assert item("teams", 3, Team, "borrow_from") == ("teams", 3, "borrowFrom")
    assert item("tiers", 1, Tier, "value") == ("priorities", "tiers", 1, "value")
    assert item("cohorts", 4) == ("cohorts", 4)


def test_a_section_is_the_keys_down_its_fields() -> None:
    assert section(
        (Environment, "kueue"), (KueueOptions, "preemption"), (Preemption, "borrow_within_cohort")
    ) == (
        "kueue",
        "preemption",
        "borrowWithinCohort",
    )
    assert section((Environment, "kubernetes_version")) == ("cluster", "kubernetesVersion")
    assert section((Environment, "overflow"), (Overflow, "inference")) == ("overflow", "inference")
    assert spec_path(InferenceService, "metric_name") == ("metric", "name")
    # The controller's settings sit beside health.backend: cap is health.cap
    assert section((Environment, "health"), (Controller, "cap"), (Cap, "max_percent_of_pool")) == (
        "health",
        "cap",
        "maxPercentOfPool",
    )


def test_a_derived_field_has_no_key_to_report_at() -> None:
    with pytest.raises(TypeError, match="per_node is derived or inline"):
        spec_path(Pool, "per_node")
    with pytest.raises(TypeError, match="controller is derived or inline"):
        spec_path(Health, "controller")
