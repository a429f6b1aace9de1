"""Policies over the rendered objects of the inline spec of test_kueue_quotas.py: clean as
rendered, and exactly one finding, at the object broken here, for each break."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from generators.pipeline import render
from policies import kueue_rules, names, quota_conservation, references
from policies.context import Context, RenderedObject
from tests.oracles.quota_spec import SPEC
from tests.oracles.spec import environment

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory) -> Context:
    env = environment(tmp_path_factory.mktemp("oracle"), SPEC)
    files = render.render_environment(env)
    objects = tuple(RenderedObject(f"rendered/oracle/{f.path}", f.obj) for f in files)
    return Context(env, objects)


def broken(context: Context, kind: str, name: str, edit: Edit) -> Context:
    objects = []
    for item in context.objects:
        if (item.kind, item.name) == (kind, name):
            obj = copy.deepcopy(dict(item.obj))
            edit(obj)
            item = RenderedObject(item.path, obj)
        objects.append(item)
    return Context(context.env, tuple(objects))


def _parent(obj: dict[str, Any]) -> None:
    obj["spec"]["parentName"] = "nowhere"


def _first_cell(key: str, value: str) -> Edit:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0][key] = value

    return edit


@pytest.mark.parametrize("policy", [references, quota_conservation, kueue_rules, names], ids=lambda p: p.ID)
def test_the_inline_spec_renders_clean(context: Context, policy: Any) -> None:
    assert list(policy.check(context)) == []


def test_a_cohort_parent_that_does_not_exist(context: Context) -> None:
    [finding] = references.check(broken(context, "Cohort", "research", _parent))
    assert (finding.kind, finding.name) == ("Cohort", "research")
    expected = "spec.parentName names Cohort 'nowhere', which this environment does not render"
    assert finding.message.startswith(expected), finding.message


def test_quotas_above_the_pool(context: Context) -> None:
    more = broken(context, "ClusterQueue", "mid", _first_cell("nominalQuota", "96"))
    [finding] = quota_conservation.check(more)
    # train GPUs: alpha 24 + mid 96 + zeta 32 + probe 0 = 152 > 12 schedulable nodes x 8 = 96
    assert finding.message.startswith(
        "nvidia.com/gpu: nominal quotas sum to 152, above the 96 that 12 schedulable nodes of pool train back"
    ), finding.message


def test_lending_limit_above_nominal(context: Context) -> None:
    [finding] = kueue_rules.check(broken(context, "ClusterQueue", "mid", _first_cell("lendingLimit", "41")))
    assert "lendingLimit 41 is above nominalQuota 40" in finding.message, finding.message


def _rename(name: str) -> Edit:
    def edit(obj: dict[str, Any]) -> None:
        obj["metadata"]["name"] = name

    return edit


def test_a_namespace_name_is_a_dns_label_of_at_most_63_characters(context: Context) -> None:
    assert list(names.check(broken(context, "Namespace", "alpha", _rename("a" * 63)))) == []
    [finding] = names.check(broken(context, "Namespace", "alpha", _rename("a" * 64)))
    assert finding.message == f"metadata.name {'a' * 64!r} is not a DNS-1123 label (<= 63)"
