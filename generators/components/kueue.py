"""rendered/<env>/kueue/: flavors, topologies, cohorts, queues; and the controller config.

The Kueue controller reads its Configuration once, at start-up, from a ConfigMap
(kueue-manager-config) that Kueue's installer owns: the Helm chart renders it from
`managerConfig.controllerManagerConfigYaml` (kueue v0.19.2 charts/kueue/templates/manager/
manager-config.yaml) and rolls the manager when it changes (the
`charts.kueue.x-k8s.io/config-checksum` annotation in templates/manager/manager.yaml). A
second owner of that ConfigMap (Argo CD) would fight the chart on every upgrade, and Argo CD
would never restart the controller. So by default the configuration is an installer input,
rendered/<env>/installers/kueue-values.yaml, a values fragment for that chart, outside the
Argo CD Application (generators/components/argocd.py excludes installers/). The opt-in
`kueue.configurationDelivery: configMap` renders the ConfigMap itself instead, for clusters
that install Kueue from plain manifests and let trainyard own it (docs/kueue.md: it then
needs a `kubectl rollout restart` after each change).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from generators import charts, yamlemit
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
    return render(
        "kueue/clusterqueue.yaml.j2", queue=queue, team=team, kueue=env.kueue,
        resources=[r.name for r in env.resources], flavors=_flavors(queue.flavors),
        weight=_weight(team.fair_sharing_weight),
    )


HELM_VALUES = "kueue-values.yaml"  # rendered/<env>/installers/<this>
HELM = "helmValues"
CONFIG_MAP = "configMap"
CONFIG_MAP_NAME = "kueue-manager-config"  # the name the chart and the manifests give it
CONFIG_KEY = "controller_manager_config.yaml"


def configuration(env: Environment) -> Obj:
    """The controller's Configuration (config.kueue.x-k8s.io/v1beta2), as data."""
    config: Obj = render("kueue/configuration.yaml.j2", kueue=env.kueue)
    return config


def config_map(env: Environment) -> Obj:
    """kueue-manager-config with the Configuration (delivery `configMap` only)."""
    return render("kueue/configmap.yaml.j2", namespace=env.kueue.namespace,
                  name=CONFIG_MAP_NAME, key=CONFIG_KEY, config=yamlemit.dump(configuration(env)))


def helm_values(env: Environment) -> Obj:
    """The Kueue chart's values fragment carrying the Configuration (delivery `helmValues`)."""
    values: Obj = render("kueue/helm-values.yaml.j2", config=yamlemit.dump(configuration(env)),
                         prometheus_namespace=env.monitoring.namespace)
    return values


def installer_inputs(env: Environment) -> dict[str, tuple[str, Obj]]:
    """file name under rendered/<env>/installers/ -> (header comment, document): inputs for
    another project's installer, never applied by Argo CD (generators/render.py)."""
    if env.kueue.configuration_delivery != HELM:
        return {}
    chart = charts.KUEUE
    header = (
        f"Helm values for the Kueue chart v{chart.version}, environment {env.name}: rendered from\n"
        f"{env.source_file} by generators/components/kueue.py; do not edit. Argo CD does not\n"
        "apply this folder. Pass it to the chart (installed in the Configuration's namespace),\n"
        "after kube-prometheus-stack (the chart's metrics ServiceMonitor needs its CRD):\n"
        f"  {chart.command(env.kueue.namespace, f'rendered/{env.name}/installers/{HELM_VALUES}')}\n"
        "The chart owns ConfigMap kueue-manager-config and restarts the controller when this\n"
        "changes (Kueue reads its Configuration only at start-up); enablePrometheus gives\n"
        "Prometheus the controller's metrics. See docs/kueue.md."
    )
    return {HELM_VALUES: (header, helm_values(env))}


def generate(env: Environment, earlier: Sequence[Obj] = ()) -> list[Obj]:
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
    if env.kueue.configuration_delivery == CONFIG_MAP:
        objects.append(config_map(env))
    return objects
