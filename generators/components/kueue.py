"""rendered/<env>/kueue/: flavors, topologies, cohorts, queues and the controller config."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from generators import yamlemit
from generators.components import Obj
from generators.model.types import ClusterQueue, Environment, FlavorQuota, ResourceKind
from generators.quantity import canonical
from generators.templating import render


def _weight(weight: float | None) -> str | None:
    """fairSharing.weight is a resource.Quantity: print it canonically ("500m", "2")."""
    return None if weight is None else canonical(Fraction(str(weight)), "decimal")


def _show(resource: ResourceKind, amount: Fraction | None) -> str | None:
    return None if amount is None else resource.show(amount)


def _flavors(flavors: tuple[FlavorQuota, ...]) -> list[dict[str, Any]]:
    return [
        {
            "name": flavor.pool,
            "cells": [
                {
                    "name": q.resource.name,
                    "nominalQuota": q.resource.show(q.nominal),
                    "borrowingLimit": _show(q.resource, q.borrowing_limit),
                    "lendingLimit": _show(q.resource, q.lending_limit),
                }
                for q in flavor.quotas
            ],
        }
        for flavor in flavors
    ]


def cluster_queue(env: Environment, queue: ClusterQueue) -> Obj:
    team = next(t for t in env.teams if t.name == queue.team)
    obj: Obj = render(
        "kueue/clusterqueue.yaml.j2", queue=queue, team=team, kueue=env.kueue,
        resources=[r.name for r in env.resources], flavors=_flavors(queue.flavors),
        weight=_weight(team.fair_sharing_weight),
    )
    return obj


def configuration(env: Environment) -> Obj:
    config = render("kueue/configuration.yaml.j2", kueue=env.kueue)
    obj: Obj = render("kueue/configmap.yaml.j2", namespace=env.kueue.namespace,
                      config=yamlemit.dump(config))
    return obj


def generate(env: Environment) -> list[Obj]:
    objects: list[Obj] = []
    for pool in env.pools:
        if pool.topology_levels:
            objects.append(render("kueue/topology.yaml.j2", pool=pool))
        objects.append(render("kueue/resourceflavor.yaml.j2", pool=pool))
    for cohort in env.cohorts:
        objects.append(render("kueue/cohort.yaml.j2", cohort=cohort,
                              weight=_weight(cohort.fair_sharing_weight)))
    teams = {t.name: t for t in env.teams}
    for queue in env.cluster_queues:
        objects.append(cluster_queue(env, queue))
        for ns in teams[queue.team].namespaces:
            objects.append(render("kueue/localqueue.yaml.j2", queue=queue, namespace=ns))
    objects.append(configuration(env))
    return objects
