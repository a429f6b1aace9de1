"""rendered/<env>/namespaces/: a Namespace per team namespace."""

from __future__ import annotations

from collections.abc import Sequence

from generators.k8s.objects import Obj
from generators.model.environment import Environment
from generators.output.templating import render


def generate(env: Environment, earlier: Sequence[Obj] = ()) -> list[Obj]:
    return [
        render("namespaces/namespace.yaml.j2", namespace=ns, team=team)
        for team in env.teams
        for ns in team.namespaces
    ]
