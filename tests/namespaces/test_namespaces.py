"""generators/components/namespaces.py: one Namespace per namespace a team lists in the spec,
labelled with its team (what the priority and quota rules of other components select on).
Expected from each shipped environment's spec, read by the spec loader, not the model."""

from __future__ import annotations

import pytest

from generators.components import namespaces
from generators.layout import environment_names
from generators.model.load import load
from generators.spec.load import load_valid
from tests.support import ROOT


@pytest.mark.parametrize("env_name", environment_names(ROOT))
def test_one_namespace_per_team_namespace_labelled_with_its_team(env_name: str) -> None:
    _, spec = load_valid(ROOT, env_name)
    expected = sorted((ns, team["name"]) for team in spec["teams"] for ns in team["namespaces"])
    objects = namespaces.generate(load(ROOT, env_name))
    assert {o["kind"] for o in objects} == {"Namespace"}
    assert (
        sorted((o["metadata"]["name"], o["metadata"]["labels"]["trainyard.dev/team"]) for o in objects)
        == expected
    )
    assert len(expected) >= 2  # the walk saw teams
