"""The overflow gate controller: the trainyard-gate program running the TaintPolicy (one
gate per provider, preferred first), its RBAC and its Lease."""

from __future__ import annotations

from typing import Any

from generators.k8s.objects import Obj
from generators.k8s.rbac import CLUSTER_PREFIX, identity, namespaced
from generators.k8s.workload import gate_program
from generators.model.overflow import GATE, GATE_TAINT_VALUE, Overflow
from generators.output.templating import render
from generators.upstream.rbac import lease_rules, rule


def gate_rules(ov: Overflow) -> list[dict[str, Any]]:
    """list finds the nodes by label (list cannot be limited by name and only reads);
    get (re-read after a conflict) and patch only the rendered virtual nodes. The gate's
    ValidatingAdmissionPolicy then limits a patch to its own taint."""
    return [rule([""], ["nodes"], ["list"]), rule([""], ["nodes"], ["get", "patch"], list(ov.virtual_nodes))]


GATE_LEASE_RULES = lease_rules(GATE, ["get", "update"])


def taint_policy(ov: Overflow) -> Obj:
    """The gate controller's TaintPolicy: one gate per provider, preferred first."""
    return render(
        "overflow/taintpolicy.yaml.j2",
        name=GATE,
        gate=ov.gate,
        providers=ov.providers,
        taint_value=GATE_TAINT_VALUE,
    )


def gate_objects(ov: Overflow) -> list[Obj]:
    return [
        *identity(GATE, ov.namespace, CLUSTER_PREFIX + GATE, gate_rules(ov)),
        *namespaced(GATE, ov.namespace, GATE_LEASE_RULES),
        *gate_program(GATE, ov.namespace, ov.gate, taint_policy(ov)),
    ]
