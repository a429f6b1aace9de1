"""The overflow admission policies (CEL) and the pod snippet inference Deployments use.

- MutatingAdmissionPolicy: labels node vk-<p> with trainyard.dev/provider=<p> (virtual-kubelet
  has no flag for extra node labels), so gates and affinities select providers by label, and
  gives a newly created vk-<p> the closed gate taint (fail safe while the gate is down).
- ValidatingAdmissionPolicy: in the inference namespaces, refuses pods that tolerate the gate
  taint (directly or through a key-less Exists toleration) or carry a NoExecute toleration
  other than the two the API server adds to every pod itself.
- ValidatingAdmissionPolicy on the gate controller's identity: a node update may only add or
  remove its own NoSchedule taint (labels, annotations, other taints, unschedulable kept).
- ValidatingAdmissionPolicy on the virtual-kubelets' identities: a node update may not drop
  the gate taint (a provider must not open its own gate).
"""

from __future__ import annotations

import json
from typing import Any

from generators.components import Obj
from generators.model.overflow import (
    GATE_TAINT_VALUE,
    IN_CLUSTER_WEIGHT,
    PROVIDER_LABEL,
    InferenceService,
    Overflow,
)
from generators.templating import render

NODE_LABEL_POLICY = "trainyard-virtual-node-labels"
TOLERATION_POLICY = "trainyard-inference-tolerations"
GATE_NODE_POLICY = "trainyard-gate-node-changes"
VK_NODE_POLICY = "trainyard-virtual-kubelet-gate-taint"
# DefaultTolerationSeconds adds these NoExecute tolerations to every pod; they are harmless.
LIFECYCLE_NOEXECUTE_KEYS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def _cel(value: Any) -> str:
    """A CEL literal for a string, list or map of strings (JSON's syntax is valid CEL here)."""
    return json.dumps(value)


def gate_taint_patch(ov: Overflow) -> str:
    """JSONPatch CEL adding the closed gate taint to a node this policy sees for the first
    time, unless it already has the gate's key with NoSchedule. spec.taints is an atomic
    list: an ApplyConfiguration would replace the provider's own taints, a JSONPatch
    "add .../-" appends.

    "First time" is a CREATE, or an UPDATE of a node that does not carry the provider label
    yet: the node was registered before the policy took effect (policies act 1 to 3 s after
    they are created, and a virtual-kubelet can register in that window; the cluster in a box
    caught it: the gate then adopted "open" at start-up and kept vk-mock open). That first
    UPDATE (the node lifecycle controller lifting node.kubernetes.io/not-ready, at the latest)
    closes it. Later updates never re-add it: the label is there, so an opened gate stays
    open."""
    taint = (f"Object.spec.taints{{key: {_cel(ov.gate.taint_key)}, value: {_cel(GATE_TAINT_VALUE)}, "
             "effect: 'NoSchedule'}")
    has_taints = "has(object.spec) && has(object.spec.taints)"
    present = (f"({has_taints} && object.spec.taints.exists(t, t.key == {_cel(ov.gate.taint_key)} "
               "&& t.effect == 'NoSchedule'))")
    labelled = (f"(request.operation == 'UPDATE' && has(oldObject.metadata.labels) && "
                f"{_cel(PROVIDER_LABEL)} in oldObject.metadata.labels)")
    return (f"{labelled} || {present} ? [] : "
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
        render("overflow/mutatingadmissionpolicy.yaml.j2", name=NODE_LABEL_POLICY,
               match_expression=f"object.metadata.name in {_cel(sorted(providers))}",
               provider_expression=f"{_cel(providers)}[object.metadata.name]",
               mutations=mutations),
        render("overflow/mutatingadmissionpolicybinding.yaml.j2", name=NODE_LABEL_POLICY),
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
        render("overflow/validatingadmissionpolicy.yaml.j2", name=TOLERATION_POLICY,
               validations=toleration_validations(ov.gate.taint_key)),
        render("overflow/validatingadmissionpolicybinding.yaml.j2", name=TOLERATION_POLICY,
               namespaces=ov.inference_namespaces),
    ]


def service_account(ov: Overflow, name: str) -> str:
    return f"system:serviceaccount:{ov.namespace}:{name}"


def _taints(var: str) -> str:
    return f"(has({var}.spec) && has({var}.spec.taints) ? {var}.spec.taints : [])"


def _field(var: str, parent: str, field: str, empty: str) -> str:
    return f"(has({var}.{parent}.{field}) ? {var}.{parent}.{field} : {empty})"


def _same_map(field: str, exempt: str) -> str:
    """metadata.<field> equal in object and oldObject, except key `exempt`: the node-label
    MutatingAdmissionPolicy sets the provider label on any update, so an update by the gate
    may carry it in when the node was created before the policy was active."""
    new = _field("object", "metadata", field, "{}")
    old = _field("oldObject", "metadata", field, "{}")
    return (f"{old}.all(k, k == {_cel(exempt)} || (k in {new} && {new}[k] == {old}[k])) && "
            f"{new}.all(k, k == {_cel(exempt)} || k in {old})")


def gate_node_validations(key: str) -> list[dict[str, str]]:
    """CEL over a node UPDATE by the gate: the only difference allowed is its own taint."""
    others = "{t}.filter(x, x.key != " + _cel(key) + ")"
    new, old = _taints("object"), _taints("oldObject")
    same = "the overflow gate may only add or remove its own NoSchedule taint on a node"
    return [
        {"expression": f"{others.format(t=new)} == {others.format(t=old)}",
         "message": f"{same}: other taints must stay as they are", "reason": "Forbidden"},
        {"expression": f"{new}.filter(x, x.key == {_cel(key)}).all(x, x.effect == 'NoSchedule' && "
                       f"has(x.value) && x.value == {_cel(GATE_TAINT_VALUE)})",
         "message": f"{same}: {key}={GATE_TAINT_VALUE}:NoSchedule", "reason": "Forbidden"},
        {"expression": f"{_same_map('labels', PROVIDER_LABEL)} && {_same_map('annotations', '')}",
         "message": f"{same}: labels and annotations must stay as they are", "reason": "Forbidden"},
        {"expression": f"{_field('object', 'spec', 'unschedulable', 'false')} == "
                       f"{_field('oldObject', 'spec', 'unschedulable', 'false')}",
         "message": f"{same}: it may not cordon or uncordon", "reason": "Forbidden"},
    ]


def virtual_kubelet_validations(key: str) -> list[dict[str, str]]:
    had = f"{_taints('oldObject')}.exists(x, x.key == {_cel(key)} && x.effect == 'NoSchedule')"
    has = f"{_taints('object')}.exists(x, x.key == {_cel(key)} && x.effect == 'NoSchedule')"
    return [{"expression": f"!{had} || {has}",
             "message": f"a virtual-kubelet may not remove the overflow gate taint {key}: only the "
                        "gate controller opens a provider", "reason": "Forbidden"}]


def node_guard_policies(ov: Overflow) -> list[Obj]:
    """Node updates by the gate and by the virtual-kubelets, limited beyond what RBAC can say."""
    key = ov.gate.taint_key
    gate = service_account(ov, "overflow-gate")
    virtual = sorted(service_account(ov, node) for node in ov.virtual_nodes)
    objects: list[Obj] = []
    for name, users, validations in (
        (GATE_NODE_POLICY, [gate], gate_node_validations(key)),
        (VK_NODE_POLICY, virtual, virtual_kubelet_validations(key)),
    ):
        objects += [
            render("overflow/nodeguardpolicy.yaml.j2", name=name, validations=validations,
                   match_expression=f"request.userInfo.username in {_cel(users)}"),
            render("overflow/validatingadmissionpolicybinding.yaml.j2", name=name, namespaces=None),
        ]
    return objects


def admission_objects(ov: Overflow) -> list[Obj]:
    return [*node_label_policy(ov), *toleration_policy(ov), *node_guard_policies(ov)]


def inference_pod_snippet(ov: Overflow, svc: InferenceService) -> dict[str, Any]:
    """What an inference Deployment's pod template spec needs (documented in docs/overflow.md):
    its tier, the provider taint tolerated (never the gate), in-cluster nodes preferred, then
    the providers in fill order."""
    # Every virtual node carries the provider label, whichever program registers it (node-cli
    # sets type=virtual-kubelet, interLink virtual-node.interlink/type): no real node does.
    preferences = [{"weight": IN_CLUSTER_WEIGHT, "preference": {"matchExpressions": [
        {"key": PROVIDER_LABEL, "operator": "DoesNotExist"}]}}]
    preferences += [{"weight": p.affinity_weight, "preference": {"matchExpressions": [
        {"key": PROVIDER_LABEL, "operator": "In", "values": [p.name]}]}} for p in ov.providers]
    return {
        "priorityClassName": svc.tier,
        # Each provider's node carries its own program's taint (generators/providers/).
        "tolerations": [{"key": key, "operator": "Exists", "effect": "NoSchedule"}
                        for key in sorted({p.node_taint.key for p in ov.providers})],
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferences}},
    }
