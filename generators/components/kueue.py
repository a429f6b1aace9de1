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

import json
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from generators.components import Obj
from generators.k8s.quantity import canonical
from generators.model.environment import Environment
from generators.model.types import ClusterQueue, FlavorQuota, ResourceKind
from generators.output import yamlemit
from generators.output.templating import render
from generators.upstream import charts, kubernetes


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
        "kueue/clusterqueue.yaml.j2",
        queue=queue,
        team=team,
        kueue=env.kueue,
        resources=[r.name for r in env.resources],
        flavors=_flavors(queue.flavors),
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
    return render(
        "kueue/configmap.yaml.j2",
        namespace=env.kueue.namespace,
        name=CONFIG_MAP_NAME,
        key=CONFIG_KEY,
        config=yamlemit.dump(configuration(env)),
    )


def helm_values(env: Environment) -> Obj:
    """The Kueue chart's values fragment carrying the Configuration (delivery `helmValues`)."""
    values: Obj = render(
        "kueue/helm-values.yaml.j2",
        config=yamlemit.dump(configuration(env)),
    )
    return values


def installer_inputs(env: Environment) -> dict[str, tuple[str, Obj]]:
    """file name under rendered/<env>/installers/ -> (header comment, document): inputs for
    another project's installer, never applied by Argo CD (generators/pipeline/render.py)."""
    if env.kueue.configuration_delivery != HELM:
        return {}
    chart = charts.KUEUE
    header = (
        f"Helm values for the Kueue chart v{chart.version}, environment {env.name}: rendered from\n"
        f"{env.source_file} by generators/components/kueue.py; do not edit. Argo CD does not\n"
        "apply this folder. Pass it to the chart (installed in the Configuration's namespace):\n"
        f"  {chart.command(env.kueue.namespace, f'rendered/{env.name}/installers/{HELM_VALUES}')}\n"
        "The chart owns ConfigMap kueue-manager-config and restarts the controller when this\n"
        "changes (Kueue reads its Configuration only at start-up). Prometheus scrapes the\n"
        f"controller through trainyard's ServiceMonitor (rendered/{env.name}/monitoring/), not the\n"
        "chart's (enablePrometheus: false). See docs/kueue.md."
    )
    return {HELM_VALUES: (header, helm_values(env))}


def generate(env: Environment, earlier: Sequence[Obj] = ()) -> list[Obj]:
    objects: list[Obj] = []
    for pool in env.pools:
        if pool.topology_levels:
            objects.append(render("kueue/topology.yaml.j2", pool=pool))
        objects.append(render("kueue/resourceflavor.yaml.j2", pool=pool))
    for cohort in env.cohorts:
        objects.append(
            render("kueue/cohort.yaml.j2", cohort=cohort, weight=_weight(cohort.fair_sharing_weight))
        )
    teams = {t.name: t for t in env.teams}
    for queue in env.cluster_queues:
        objects.append(cluster_queue(env, queue))
        for ns in teams[queue.team].namespaces:
            objects.append(render("kueue/localqueue.yaml.j2", queue=queue, namespace=ns))
    objects += default_topology(env)
    if env.kueue.configuration_delivery == CONFIG_MAP:
        objects.append(config_map(env))
    return objects


QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
TOPOLOGY_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    PREFERRED_TOPOLOGY,
    "kueue.x-k8s.io/podset-unconstrained-topology",
)
HOSTNAME = "kubernetes.io/hostname"


def default_level(env: Environment, queue: ClusterQueue) -> str | None:
    """The level a class-less gang of a topology queue should prefer: the topmost level its
    flavors share (a gang then takes as few blocks, then racks, as fit); None when the
    queue has no topology, its pools' levels differ, or the only level is the host."""
    pools = {p.name: p for p in env.pools}
    levels = {pools[f.pool].topology_levels for f in queue.flavors}
    if not queue.topology or len(levels) != 1:
        return None
    (shared,) = levels
    return shared[0] if shared and shared[0] != HOSTNAME else None


def default_topology(env: Environment) -> list[Obj]:
    """Per topology queue, a MutatingAdmissionPolicy giving its Jobs without a topology
    annotation the queue's preferred level (issue 21 finding 1). From Kubernetes 1.36 only
    (generators/upstream/kubernetes.py): before, a Job has to ask for a level itself (docs/kueue.md)."""
    if not kubernetes.has_mutating_admission(env.kubernetes_version):
        return []
    teams = {t.name: t for t in env.teams}
    objects: list[Obj] = []
    for queue in env.cluster_queues:
        level = default_level(env, queue)
        if level is None:
            continue
        name = f"trainyard-default-topology-{queue.name}"
        annotations = "[" + ", ".join(json.dumps(a) for a in TOPOLOGY_ANNOTATIONS) + "]"
        template = "object.spec.template"
        objects += [
            render(
                "kueue/default-topology-mutatingadmissionpolicy.yaml.j2",
                name=name,
                to_queue=(
                    f"has(object.metadata.labels) && {json.dumps(QUEUE_LABEL)} in "
                    f"object.metadata.labels && object.metadata.labels[{json.dumps(QUEUE_LABEL)}]"
                    f" == {json.dumps(queue.name)}"
                ),
                no_topology=(
                    f"!has({template}.metadata) || !has({template}.metadata.annotations) || "
                    f"!{annotations}.exists(k, k in {template}.metadata.annotations)"
                ),
                apply_expression=(
                    "Object{spec: Object.spec{template: Object.spec.template{metadata: "
                    "Object.spec.template.metadata{annotations: "
                    f"{{{json.dumps(PREFERRED_TOPOLOGY)}: {json.dumps(level)}}}}}}}}}}}"
                ),
            ),
            render(
                "kueue/mutatingadmissionpolicybinding.yaml.j2",
                name=name,
                namespaces=teams[queue.team].namespaces,
            ),
        ]
    return objects
