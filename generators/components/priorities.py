"""rendered/<env>/priorities/: per tier, a PriorityClass and a WorkloadPriorityClass."""

from __future__ import annotations

from generators.components import Obj
from generators.model.types import Environment
from generators.templating import render


def generate(env: Environment) -> list[Obj]:
    objects: list[Obj] = []
    for tier in env.tiers:
        objects.append(render("priorities/priorityclass.yaml.j2", tier=tier))
        objects.append(render("priorities/workloadpriorityclass.yaml.j2", tier=tier))
    return objects
