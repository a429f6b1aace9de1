"""rendered/<env>/health/: the built-in health controller (backend trainyard).

The gate program (gate/, image trainyard-gate) runs a NodeHealthPolicy (ConfigMap gpu-health-policy,
the contract in docs/health.md): per node, the condition queries of model/health.py; a node
bad for long enough gets the NoSchedule taint trainyard.dev/gpu-health=<reason>, within the
cap. Nothing is rendered with backend none or nvsentinel (NVSentinel is installed on its own;
the admission policies that make pods react to either backend are in priorities.py).

Same workload as the overflow gate (generators/k8s/workload.py, templates/common/: one
program, one Deployment shape, the same hardening and the machinery's priority class), and
the same least-privilege layers: RBAC names verbs and resources, a ValidatingAdmissionPolicy
on its identity limits what a node update may change (generators/k8s/admission.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from generators.k8s import network
from generators.k8s.admission import node_guard
from generators.k8s.cel import field, literal, same_map_except, taints
from generators.k8s.objects import Obj, namespace, service_monitor
from generators.k8s.rbac import CLUSTER_PREFIX, identity, namespaced
from generators.k8s.workload import gate_program
from generators.model.environment import Environment
from generators.model.health import (
    NAME,
    POOL_LABEL,
    REASON_ANNOTATION,
    SINCE_ANNOTATION,
    TAINT_EFFECT,
    TAINT_KEY,
    Controller,
)
from generators.output.templating import render
from generators.upstream.rbac import lease_rules, rule

NODE_POLICY = f"{CLUSTER_PREFIX}{NAME}-node-changes"

# The controller lists and watches nodes to find the pools' members (list cannot be limited
# by name), gets one to re-read it after a conflict and patches taints and annotations. Pool
# nodes come and go, so no resourceNames: the admission policy below narrows the patch.
NODE_RULES = [rule([""], ["nodes"], ["get", "list", "watch", "patch"])]
LEASE_RULES = lease_rules(NAME, ["get", "update"])


def node_policy(c: Controller) -> Obj:
    return render(
        "health/nodehealthpolicy.yaml.j2",
        name=NAME,
        c=c,
        taint_key=TAINT_KEY,
        reason_annotation=REASON_ANNOTATION,
        since_annotation=SINCE_ANNOTATION,
    )


def node_validations() -> list[dict[str, str]]:
    """CEL over a node UPDATE by the controller: only its taint and annotations change, only
    NoSchedule, only on pool nodes; never a cordon, a label or another taint."""
    what = f"the health controller may only set or clear the {TAINT_KEY} taint and its annotations"
    others = "{t}.filter(x, x.key != " + literal(TAINT_KEY) + ")"
    new, old = taints("object"), taints("oldObject")
    labels = field("oldObject", "metadata", "labels", "{}")
    return [
        {
            "expression": f"{labels}.exists(k, k == {literal(POOL_LABEL)})",
            "message": f"{what}, on nodes labelled {POOL_LABEL}",
            "reason": "Forbidden",
        },
        {
            "expression": f"{others.format(t=new)} == {others.format(t=old)}",
            "message": f"{what}: other taints must stay as they are",
            "reason": "Forbidden",
        },
        {
            "expression": f"{new}.filter(x, x.key == {literal(TAINT_KEY)})"
            f".all(x, x.effect == {literal(TAINT_EFFECT)})",
            "message": f"{what}: effect {TAINT_EFFECT} only (NoExecute would evict running gangs)",
            "reason": "Forbidden",
        },
        {
            "expression": f"{same_map_except('labels', [])} && "
            f"{same_map_except('annotations', [REASON_ANNOTATION, SINCE_ANNOTATION])}",
            "message": f"{what}: labels and other annotations must stay as they are",
            "reason": "Forbidden",
        },
        {
            "expression": f"{field('object', 'spec', 'unschedulable', 'false')} == "
            f"{field('oldObject', 'spec', 'unschedulable', 'false')}",
            "message": f"{what}: it may not cordon or uncordon",
            "reason": "Forbidden",
        },
    ]


def admission(c: Controller) -> list[Obj]:
    account = f"system:serviceaccount:{c.namespace}:{NAME}"
    return node_guard(NODE_POLICY, f"request.userInfo.username == {literal(account)}", node_validations())


def identities(c: Controller) -> list[Obj]:
    return [
        *identity(NAME, c.namespace, CLUSTER_PREFIX + NAME, NODE_RULES),
        *namespaced(NAME, c.namespace, LEASE_RULES),
    ]


def scraping(env: Environment, c: Controller, own_namespace: bool) -> list[Obj]:
    """Prometheus reaches /metrics (ServiceMonitor + an ingress allow). The namespace's
    default-deny is the overflow component's when it renders the namespace, else ours."""
    objects = [
        service_monitor(NAME, c.namespace, env.monitoring.selection_labels),
        network.prometheus_ingress(
            f"{NAME}-metrics",
            c.namespace,
            {"matchLabels": {"app.kubernetes.io/name": NAME}},
            env.monitoring.namespace,
            c.metrics_port,
        ),
    ]
    if own_namespace:
        objects.append(network.default_deny(c.namespace))
    return objects


def generate(env: Environment, earlier: Sequence[Obj] = ()) -> list[Obj]:
    health = env.health
    if health is None or health.controller is None:
        return []
    c = health.controller
    own_namespace = env.overflow is None or env.overflow.namespace != c.namespace
    objects: list[Obj] = []
    if own_namespace:
        objects.append(namespace(c.namespace, "infrastructure"))
    workload = gate_program(NAME, c.namespace, c, node_policy(c))
    return [*objects, *identities(c), *workload, *scraping(env, c, own_namespace), *admission(c)]
