"""rendered/<env>/health/: the built-in quarantine controller (backend trainyard).

The gate program (gate/, image trainyard-gate) runs a NodeHealthPolicy (ConfigMap gpu-health,
the contract in docs/health.md): per node, the condition queries of model/health.py; a node
bad for long enough gets the NoSchedule taint trainyard.dev/gpu-health=<reason>, within the
cap. Nothing is rendered with backend none or nvsentinel (NVSentinel is installed on its own;
the admission policies that make pods react to either backend are in priorities.py).

Same Deployment shape and hardening as the overflow gate (its templates/overflow/ files: one
program, one Deployment shape; the machinery's priority class: a preempted controller would
leave quarantines unattended), and the same least-privilege layers: RBAC names verbs and
resources, a ValidatingAdmissionPolicy on its identity limits what a node update may change.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from generators import yamlemit
from generators.components import Obj
from generators.components.overflow import (
    CLUSTER_PREFIX,
    POLICY_FILE,
    _hardened,
    _rule,
    _sha256,
)
from generators.model.health import (
    NAME,
    POOL_LABEL,
    REASON_ANNOTATION,
    SINCE_ANNOTATION,
    TAINT_EFFECT,
    TAINT_KEY,
    Controller,
)
from generators.model.types import Environment
from generators.templating import render

NODE_POLICY = f"{CLUSTER_PREFIX}{NAME}-node-changes"

# The controller lists and watches nodes to find the pools' members (list cannot be limited
# by name), gets one to re-read it after a conflict and patches taints and annotations. Pool
# nodes come and go, so no resourceNames: the admission policy below narrows the patch.
NODE_RULES = [_rule([""], ["nodes"], ["get", "list", "watch", "patch"])]
LEASE_RULES = [  # the client's LeaseLock reads, creates and replaces its one Lease
    _rule(["coordination.k8s.io"], ["leases"], ["create"]),
    _rule(["coordination.k8s.io"], ["leases"], ["get", "update"], [NAME]),
]


def _cel(value: Any) -> str:
    return json.dumps(value)


def node_policy(c: Controller) -> Obj:
    return render("health/nodehealthpolicy.yaml.j2", name=NAME, c=c, taint_key=TAINT_KEY,
                  reason_annotation=REASON_ANNOTATION, since_annotation=SINCE_ANNOTATION)


def _taints(var: str) -> str:
    return f"(has({var}.spec) && has({var}.spec.taints) ? {var}.spec.taints : [])"


def _map(var: str, field: str) -> str:
    return f"(has({var}.metadata.{field}) ? {var}.metadata.{field} : {{}})"


def _same_map_except(field: str, exempt: list[str]) -> str:
    """metadata.<field> equal in object and oldObject, except the keys in `exempt`."""
    new, old, keys = _map("object", field), _map("oldObject", field), _cel(exempt)
    return (f"{old}.all(k, k in {keys} || (k in {new} && {new}[k] == {old}[k])) && "
            f"{new}.all(k, k in {keys} || k in {old})")


def node_validations() -> list[dict[str, str]]:
    """CEL over a node UPDATE by the controller: only its taint and annotations change, only
    NoSchedule, only on pool nodes; never a cordon, a label or another taint."""
    what = f"the health controller may only set or clear the {TAINT_KEY} taint and its annotations"
    others = "{t}.filter(x, x.key != " + _cel(TAINT_KEY) + ")"
    new, old = _taints("object"), _taints("oldObject")
    unschedulable = "(has({v}.spec.unschedulable) ? {v}.spec.unschedulable : false)"
    return [
        {"expression": f"{_map('oldObject', 'labels')}.exists(k, k == {_cel(POOL_LABEL)})",
         "message": f"{what}, on nodes labelled {POOL_LABEL}", "reason": "Forbidden"},
        {"expression": f"{others.format(t=new)} == {others.format(t=old)}",
         "message": f"{what}: other taints must stay as they are", "reason": "Forbidden"},
        {"expression": f"{new}.filter(x, x.key == {_cel(TAINT_KEY)})"
                       f".all(x, x.effect == {_cel(TAINT_EFFECT)})",
         "message": f"{what}: effect {TAINT_EFFECT} only (NoExecute would evict running gangs)",
         "reason": "Forbidden"},
        {"expression": f"{_same_map_except('labels', [])} && "
                       f"{_same_map_except('annotations', [REASON_ANNOTATION, SINCE_ANNOTATION])}",
         "message": f"{what}: labels and other annotations must stay as they are", "reason": "Forbidden"},
        {"expression": f"{unschedulable.format(v='object')} == {unschedulable.format(v='oldObject')}",
         "message": f"{what}: it may not cordon or uncordon", "reason": "Forbidden"},
    ]


def admission(c: Controller) -> list[Obj]:
    account = f"system:serviceaccount:{c.namespace}:{NAME}"
    return [
        render("overflow/nodeguardpolicy.yaml.j2", name=NODE_POLICY, validations=node_validations(),
               match_expression=f"request.userInfo.username == {_cel(account)}"),
        render("overflow/validatingadmissionpolicybinding.yaml.j2", name=NODE_POLICY, namespaces=None),
    ]


def identity(c: Controller) -> list[Obj]:
    cluster_name = CLUSTER_PREFIX + NAME
    return [
        render("overflow/serviceaccount.yaml.j2", name=NAME, namespace=c.namespace),
        render("overflow/clusterrole.yaml.j2", name=cluster_name, rules=NODE_RULES),
        render("overflow/clusterrolebinding.yaml.j2", name=cluster_name, account=NAME, namespace=c.namespace),
        render("overflow/role.yaml.j2", name=NAME, namespace=c.namespace, rules=LEASE_RULES),
        render("overflow/rolebinding.yaml.j2", name=NAME, account=NAME, namespace=c.namespace),
    ]


def workload(c: Controller) -> list[Obj]:
    policy = yamlemit.dump(node_policy(c))
    args = [f"--policy=/etc/trainyard/{POLICY_FILE}", f"--metrics-port={c.metrics_port}",
            f"--lease-namespace={c.namespace}", f"--lease-name={NAME}"]
    return [
        render("overflow/configmap.yaml.j2", name=NAME, namespace=c.namespace, data={POLICY_FILE: policy}),
        render("overflow/gate-deployment.yaml.j2", name=NAME, namespace=c.namespace, gate=c, args=args,
               policy_sha256=_sha256(policy), **_hardened(c.resources)),
        render("overflow/gate-service.yaml.j2", name=NAME, namespace=c.namespace, port=c.metrics_port),
    ]


def scraping(env: Environment, c: Controller, own_namespace: bool) -> list[Obj]:
    """Prometheus reaches /metrics (ServiceMonitor + an ingress allow). The namespace's
    default-deny is the overflow component's when it renders the namespace, else ours."""
    monitoring_ns = {"kubernetes.io/metadata.name": env.monitoring.namespace}
    prometheus = {"namespaceSelector": {"matchLabels": monitoring_ns}}
    objects = [
        render("monitoring/servicemonitor.yaml.j2", name=NAME, namespace=c.namespace,
               labels=dict(env.monitoring.rule_labels)),
        render("overflow/networkpolicy.yaml.j2", name=f"{NAME}-metrics", namespace=c.namespace,
               pod_selector={"matchLabels": {"app.kubernetes.io/name": NAME}},
               ingress=[{"from": [prometheus], "ports": [{"protocol": "TCP", "port": c.metrics_port}]}]),
    ]
    if own_namespace:
        objects.append(render("overflow/networkpolicy.yaml.j2", name="default-deny-ingress",
                              namespace=c.namespace, pod_selector={}, ingress=None))
    return objects


def generate(env: Environment, earlier: Sequence[Obj] = ()) -> list[Obj]:
    health = env.health
    if health is None or health.controller is None:
        return []
    c = health.controller
    own_namespace = env.overflow is None or env.overflow.namespace != c.namespace
    objects: list[Obj] = []
    if own_namespace:
        objects.append(render("overflow/namespace.yaml.j2", name=c.namespace, role="infrastructure"))
    return [*objects, *identity(c), *workload(c), *scraping(env, c, own_namespace), *admission(c)]
