"""The overflow admission policies (CEL) and the pod snippet inference Deployments use.

- MutatingAdmissionPolicy: labels node vk-<p> with trainyard.dev/provider=<p> (virtual-kubelet
  has no flag for extra node labels), so gates and affinities select providers by label, and
  gives a newly created vk-<p> the closed gate taint (fail safe while the gate is down).
- ValidatingAdmissionPolicy: in the inference namespaces, refuses pods that tolerate the gate
  taint (directly or through a key-less Exists toleration) or carry a NoExecute toleration
  other than the two the API server adds to every pod itself.
"""

from __future__ import annotations

import json
from typing import Any

from generators.components import Obj
from generators.model.overflow import (
    GATE_TAINT_VALUE,
    IN_CLUSTER_WEIGHT,
    PROVIDER_LABEL,
    PROVIDER_TAINT_KEY,
    VIRTUAL_NODE_LABELS,
    InferenceService,
    Overflow,
)
from generators.templating import render

T = "overflow/"
NODE_LABEL_POLICY = "trainyard-virtual-node-labels"
TOLERATION_POLICY = "trainyard-inference-tolerations"
# DefaultTolerationSeconds adds these NoExecute tolerations to every pod; they are harmless.
LIFECYCLE_NOEXECUTE_KEYS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def _cel(value: Any) -> str:
    """A CEL literal for a string, list or map of strings (JSON's syntax is valid CEL here)."""
    return json.dumps(value)


def gate_taint_patch(ov: Overflow) -> str:
    """JSONPatch CEL adding the closed gate taint to a node being created, unless it already
    has the gate's key with NoSchedule. spec.taints is an atomic list: an ApplyConfiguration
    would replace the provider's own taints, a JSONPatch "add .../-" appends."""
    taint = (f"Object.spec.taints{{key: {_cel(ov.gate.taint_key)}, value: {_cel(GATE_TAINT_VALUE)}, "
             "effect: 'NoSchedule'}")
    has_taints = "has(object.spec) && has(object.spec.taints)"
    present = (f"({has_taints} && object.spec.taints.exists(t, t.key == {_cel(ov.gate.taint_key)} "
               "&& t.effect == 'NoSchedule'))")
    return (f"request.operation != 'CREATE' || {present} ? [] : "
            f"{has_taints} ? [JSONPatch{{op: 'add', path: '/spec/taints/-', value: {taint}}}] : "
            f"has(object.spec) ? [JSONPatch{{op: 'add', path: '/spec/taints', value: [{taint}]}}] : "
            f"[JSONPatch{{op: 'add', path: '/spec', value: Object.spec{{taints: [{taint}]}}}}]")


def node_label_policy(ov: Overflow) -> list[Obj]:
    providers = {p.node_name: p.name for p in ov.providers}
    apply = (f"Object{{metadata: Object.metadata{{labels: {{{_cel(PROVIDER_LABEL)}: "
             "variables.provider}}}")
    mutations = [
        {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": apply}},
        {"patchType": "JSONPatch", "jsonPatch": {"expression": gate_taint_patch(ov)}},
    ]
    return [
        render(T + "mutatingadmissionpolicy.yaml.j2", name=NODE_LABEL_POLICY,
               match_expression=f"object.metadata.name in {_cel(sorted(providers))}",
               provider_expression=f"{_cel(providers)}[object.metadata.name]",
               mutations=mutations),
        render(T + "mutatingadmissionpolicybinding.yaml.j2", name=NODE_LABEL_POLICY),
    ]


def toleration_validations(gate_key: str) -> list[dict[str, str]]:
    """CEL rules over `variables.tolerations` (the pod's tolerations, [] if none)."""
    return [
        {
            "expression": f"variables.tolerations.all(t, !has(t.key) || t.key != {_cel(gate_key)})",
            "message": f"inference pods must not tolerate the overflow gate taint {gate_key}: it keeps "
                       "them off closed providers and lets the descheduler bring them back",
            "reason": "Forbidden",
        },
        {
            "expression": "variables.tolerations.all(t, (has(t.key) && t.key != '') || "
                          "!has(t.operator) || t.operator != 'Exists')",
            "message": "a toleration with operator Exists and no key tolerates every taint, the "
                       f"overflow gate {gate_key} included; name the key",
            "reason": "Forbidden",
        },
        {
            "expression": "variables.tolerations.all(t, !has(t.effect) || t.effect != 'NoExecute' || "
                          f"(has(t.key) && t.key in {_cel(list(LIFECYCLE_NOEXECUTE_KEYS))}))",
            "message": "inference pods may not carry NoExecute tolerations: overflow uses NoSchedule "
                       "taints only, and migration back goes through the descheduler and PDBs",
            "reason": "Forbidden",
        },
    ]


def toleration_policy(ov: Overflow) -> list[Obj]:
    if not ov.inference:
        return []
    return [
        render(T + "validatingadmissionpolicy.yaml.j2", name=TOLERATION_POLICY,
               validations=toleration_validations(ov.gate.taint_key)),
        render(T + "validatingadmissionpolicybinding.yaml.j2", name=TOLERATION_POLICY,
               namespaces=ov.inference_namespaces),
    ]


def admission_objects(ov: Overflow) -> list[Obj]:
    return [*node_label_policy(ov), *toleration_policy(ov)]


def inference_pod_snippet(ov: Overflow, svc: InferenceService) -> dict[str, Any]:
    """What an inference Deployment's pod template spec needs (documented in docs/overflow.md):
    its tier, the provider taint tolerated (never the gate), in-cluster nodes preferred, then
    the providers in fill order."""
    virtual_key, virtual_value = next(iter(VIRTUAL_NODE_LABELS.items()))
    preferences = [{"weight": IN_CLUSTER_WEIGHT, "preference": {"matchExpressions": [
        {"key": virtual_key, "operator": "NotIn", "values": [virtual_value]}]}}]
    preferences += [{"weight": p.affinity_weight, "preference": {"matchExpressions": [
        {"key": PROVIDER_LABEL, "operator": "In", "values": [p.name]}]}} for p in ov.providers]
    return {
        "priorityClassName": svc.tier,
        "tolerations": [{"key": PROVIDER_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferences}},
    }
