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

from generators.k8s import objects as k8s_objects
from generators.k8s.admission import binding, mutating_binding
from generators.k8s.cel import literal
from generators.k8s.objects import Obj
from generators.model.environment import Environment
from generators.model.quantity import canonical
from generators.model.quota import preferred_level
from generators.model.types import ClusterQueue, FlavorQuota, ResourceKind
from generators.output import yamlemit
from generators.output.templating import render
from generators.upstream import charts, job_kinds, kubernetes
from generators.upstream.kubernetes import Feature, Mechanism


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
    """kueue-manager-config with the Configuration (delivery `configMap` only: Kueue
    installed from plain manifests, this ConfigMap owned by trainyard). The controller reads
    it at start-up only, so a change needs `kubectl rollout restart` of the controller
    (docs/kueue.md)."""
    return k8s_objects.config_map(
        CONFIG_MAP_NAME, env.kueue.namespace, {CONFIG_KEY: yamlemit.dump(configuration(env))}
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


def default_level(env: Environment, queue: ClusterQueue) -> str | None:
    """The level a class-less gang of a topology queue should prefer (model/quota.py,
    preferred_level); None when the queue has no topology."""
    pools = {p.name: p for p in env.pools}
    return preferred_level(pools[f.pool] for f in queue.flavors) if queue.topology else None


def _escaped(key: str) -> str:
    """A map key as a JSON Pointer segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def _template_patch(template: str, path: str, level: str) -> str:
    """CEL: the one JSONPatch giving the pod template at CEL `template` (at the JSON Pointer
    that the CEL string `path` evaluates to) the preferred-topology annotation, whatever of
    metadata/annotations it has (a JSONPatch add needs the parent to exist)."""
    annotation = {PREFERRED_TOPOLOGY: level}
    key = literal(_escaped(PREFERRED_TOPOLOGY))
    return (
        f"(!has({template}.metadata) ? JSONPatch{{op: 'add', path: {path} + '/metadata', "
        f"value: {{'annotations': {literal(annotation)}}}}} : "
        f"!has({template}.metadata.annotations) ? JSONPatch{{op: 'add', path: {path} + "
        f"'/metadata/annotations', value: {literal(annotation)}}} : "
        f"JSONPatch{{op: 'add', path: {path} + '/metadata/annotations/' + {key}, "
        f"value: {literal(level)}}})"
    )


def _untopological(template: str) -> str:
    """CEL: the pod template at `template` names no topology annotation."""
    annotations = literal(list(TOPOLOGY_ANNOTATIONS))
    return (
        f"(!has({template}.metadata) || !has({template}.metadata.annotations) || "
        f"!{annotations}.exists(k, k in {template}.metadata.annotations))"
    )


def _patch_expression(kind: job_kinds.JobKind, level: str) -> str:
    """CEL: JSONPatches annotating each of `kind`'s pod templates that names no topology
    (JobSet: each replicated job's; RayJob, RayCluster: the head's and each worker group's)."""
    if kind is job_kinds.JOBSET:
        each = "object.spec.replicatedJobs"
        at = f"'/spec/replicatedJobs/' + string({each}.indexOf(r)) + '/template/spec/template'"
        template = "r.template.spec.template"
        return f"{each}.filter(r, {_untopological(template)}).map(r, {_template_patch(template, at, level)})"
    spec = "object.spec.rayClusterSpec" if kind is job_kinds.RAYJOB else "object.spec"
    base = "/spec/rayClusterSpec" if kind is job_kinds.RAYJOB else "/spec"
    head = f"{spec}.headGroupSpec.template"
    workers = f"{spec}.workerGroupSpecs"
    at = f"'{base}/workerGroupSpecs/' + string({workers}.indexOf(w)) + '/template'"
    head_path = literal(f"{base}/headGroupSpec/template")
    head_patch = f"({_untopological(head)} ? [{_template_patch(head, head_path, level)}] : [])"
    worker_patches = (
        f"(has({workers}) ? {workers}.filter(w, {_untopological('w.template')}).map(w, "
        f"{_template_patch('w.template', at, level)}) : [])"
    )
    return f"{head_patch} + {worker_patches}"


def default_topology(env: Environment) -> list[Obj]:
    """Per topology queue and enabled job kind (batch Job, JobSet, RayJob, RayCluster: those
    whose pod templates Kueue reads the topology annotations from, upstream/job_kinds.py), the
    queue's preferred level for a gang that names no topology (Feature.DEFAULT_TOPOLOGY):
    from Kubernetes 1.36 a MutatingAdmissionPolicy writes it; below, a ValidatingAdmissionPolicy
    bound with validationActions [Warn] admits the job with a warning naming the annotation to
    add. Only integrations the spec enables: Kueue ignores the others."""
    kinds = job_kinds.enabled(env.kueue.integrations)
    levels = {q.name: lvl for q in env.cluster_queues if (lvl := default_level(env, q)) is not None}
    if not kinds or not levels:
        return []
    mechanism = kubernetes.mechanism(Feature.DEFAULT_TOPOLOGY, env.kubernetes_version)
    if mechanism is Mechanism.WARN:
        return warn_topology(env, kinds, levels)
    teams = {t.name: t for t in env.teams}
    objects: list[Obj] = []
    for queue in env.cluster_queues:
        level = levels.get(queue.name)
        if level is None:
            continue
        to_queue = (
            f"has(object.metadata.labels) && {literal(QUEUE_LABEL)} in "
            f"object.metadata.labels && object.metadata.labels[{literal(QUEUE_LABEL)}]"
            f" == {literal(queue.name)}"
        )
        for kind in kinds:
            name = f"trainyard-default-topology-{queue.name}"
            if kind is job_kinds.JOB:
                # An ApplyConfiguration: a Job has one template, at a typed path.
                patch_type, expression, no_topology = (
                    "ApplyConfiguration",
                    "Object{spec: Object.spec{template: Object.spec.template{metadata: "
                    "Object.spec.template.metadata{annotations: "
                    f"{{{literal(PREFERRED_TOPOLOGY)}: {literal(level)}}}}}}}}}}}",
                    _untopological("object.spec.template")[1:-1],
                )
            else:
                name += f"-{kind.kind.lower()}"
                patch_type, expression = "JSONPatch", _patch_expression(kind, level)
                # matchConditions cannot read variables: the template list is written out.
                no_topology = f"({kind.templates}).exists(t, {_untopological('t')})"
            objects += [
                render(
                    "kueue/default-topology-mutatingadmissionpolicy.yaml.j2",
                    name=name,
                    kind=kind,
                    templates=kind.templates,
                    to_queue=to_queue,
                    no_topology=no_topology,
                    patch_type=patch_type,
                    expression=expression,
                ),
                mutating_binding(name, teams[queue.team].namespaces),
            ]
    return objects


def warn_topology(env: Environment, kinds: list[job_kinds.JobKind], levels: dict[str, str]) -> list[Obj]:
    """Below 1.36: per kind, a warning (not a refusal) for a gang sent to a topology queue
    whose pod templates name no topology, naming the annotation and level to add."""
    teams = {t.name: t for t in env.teams}
    namespaces = sorted(
        {ns for q in env.cluster_queues if q.name in levels for ns in teams[q.team].namespaces}
    )
    queue = f"object.metadata.labels[{literal(QUEUE_LABEL)}]"
    level_of = literal(dict(sorted(levels.items())))
    objects: list[Obj] = []
    for kind in kinds:
        name = f"trainyard-default-topology-{kind.kind.lower()}"
        message = (
            f"'{kind.kind} ' + object.metadata.name + ' names no topology, so Kueue places it host by "
            f"host: add the annotation {PREFERRED_TOPOLOGY}: ' + {level_of}[{queue}] + ' to its pod "
            f"templates ({', '.join(kind.paths)}) to keep the gang on as few ' + {level_of}[{queue}] + "
            f"' domains as fit (Kubernetes {env.kubernetes_version} has no MutatingAdmissionPolicy to "
            "add it)'"
        )
        objects += [
            render(
                "kueue/default-topology-validatingadmissionpolicy.yaml.j2",
                name=name,
                kind=kind,
                templates=kind.templates,
                to_queue=f"has(object.metadata.labels) && {literal(QUEUE_LABEL)} in "
                f"object.metadata.labels && {queue} in {level_of}",
                expression=f"variables.templates.all(t, !{_untopological('t')})",
                message=message,
            ),
            binding(name, namespaces, action="Warn"),
        ]
    return objects
