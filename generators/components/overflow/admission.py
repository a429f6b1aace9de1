"""The overflow admission policies (CEL; the fragments shared with other components are in
generators/k8s/cel.py, the node guard's objects in generators/k8s/admission.py).

- MutatingAdmissionPolicy (Kubernetes 1.36+, upstream/kubernetes.py Feature.VIRTUAL_NODE):
  labels node vk-<p> with trainyard.dev/provider=<p> (virtual-kubelet's node-cli has no flag
  for extra node labels), so gates and affinities select providers by label, and gives a
  newly created vk-<p> the closed gate taint (fail safe while the gate is down). Below 1.36
  the provider's program registers its node so itself (virtual_kubelets.born_with).
- ValidatingAdmissionPolicy: in the inference namespaces, refuses pods that tolerate the gate
  taint (directly or through a key-less Exists toleration) or carry a NoExecute toleration
  other than the two the API server adds to every pod itself.
- ValidatingAdmissionPolicy on the gate controller's identity: a node update may only add or
  remove its own NoSchedule taint (labels, annotations, other taints, unschedulable kept).
- ValidatingAdmissionPolicy on the virtual-kubelets' identities: a node update may not drop
  the gate taint (a provider must not open its own gate).
"""

from __future__ import annotations

from generators.k8s.admission import binding, mutating_binding, node_guard, tolerations_policy
from generators.k8s.cel import field, literal, same_map_except, taints
from generators.k8s.objects import Obj
from generators.model.overflow import GATE, GATE_TAINT_VALUE, PROVIDER_LABEL, Overflow
from generators.output.templating import render
from generators.upstream.kubernetes import Mechanism

NODE_LABEL_POLICY = "trainyard-virtual-node-labels"
TOLERATION_POLICY = "trainyard-inference-tolerations"
GATE_NODE_POLICY = "trainyard-gate-node-changes"
VK_NODE_POLICY = "trainyard-virtual-kubelet-gate-taint"
# DefaultTolerationSeconds adds these NoExecute tolerations to every pod; they are harmless.
LIFECYCLE_NOEXECUTE_KEYS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


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
    taint = (
        f"Object.spec.taints{{key: {literal(ov.gate.taint_key)}, value: {literal(GATE_TAINT_VALUE)}, "
        "effect: 'NoSchedule'}"
    )
    has_taints = "has(object.spec) && has(object.spec.taints)"
    present = (
        f"({has_taints} && object.spec.taints.exists(t, t.key == {literal(ov.gate.taint_key)} "
        "&& t.effect == 'NoSchedule'))"
    )
    labelled = (
        f"(request.operation == 'UPDATE' && has(oldObject.metadata.labels) && "
        f"{literal(PROVIDER_LABEL)} in oldObject.metadata.labels)"
    )
    return (
        f"{labelled} || {present} ? [] : "
        f"{has_taints} ? [JSONPatch{{op: 'add', path: '/spec/taints/-', value: {taint}}}] : "
        f"has(object.spec) ? [JSONPatch{{op: 'add', path: '/spec/taints', value: [{taint}]}}] : "
        f"[JSONPatch{{op: 'add', path: '/spec', value: Object.spec{{taints: [{taint}]}}}}]"
    )


def node_label_policy(ov: Overflow) -> list[Obj]:
    providers = {p.node_name: p.name for p in ov.providers}
    apply = (
        f"Object{{metadata: Object.metadata{{labels: {{{literal(PROVIDER_LABEL)}: variables.provider}}}}}}"
    )
    mutations = [
        {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": apply}},
        {"patchType": "JSONPatch", "jsonPatch": {"expression": gate_taint_patch(ov)}},
    ]
    return [
        render(
            "overflow/mutatingadmissionpolicy.yaml.j2",
            name=NODE_LABEL_POLICY,
            match_expression=f"object.metadata.name in {literal(sorted(providers))}",
            provider_expression=f"{literal(providers)}[object.metadata.name]",
            mutations=mutations,
        ),
        mutating_binding(NODE_LABEL_POLICY, None),
    ]


def toleration_validations(gate_key: str) -> list[dict[str, str]]:
    """CEL rules over `variables.tolerations` (the pod's tolerations, [] if none)."""
    return [
        {
            "expression": f"variables.tolerations.all(t, !has(t.key) || t.key != {literal(gate_key)})",
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
            f"(has(t.key) && t.key in {literal(list(LIFECYCLE_NOEXECUTE_KEYS))}))",
            "message": "inference pods may not carry NoExecute tolerations: overflow uses NoSchedule "
            "taints only, and migration back goes through the descheduler and PDBs",
            "reason": "Forbidden",
        },
    ]


def toleration_policy(ov: Overflow) -> list[Obj]:
    if not ov.inference:
        return []
    return [
        # The gate is what keeps inference (and the money) in the cluster, and what lets the
        # descheduler bring it back: inference never tolerates it.
        tolerations_policy(TOLERATION_POLICY, toleration_validations(ov.gate.taint_key)),
        binding(TOLERATION_POLICY, ov.inference_namespaces),
    ]


def service_account(ov: Overflow, name: str) -> str:
    return f"system:serviceaccount:{ov.namespace}:{name}"


def gate_node_validations(key: str) -> list[dict[str, str]]:
    """CEL over a node UPDATE by the gate: the only difference allowed is its own taint."""
    others = "{t}.filter(x, x.key != " + literal(key) + ")"
    new, old = taints("object"), taints("oldObject")
    same = "the overflow gate may only add or remove its own NoSchedule taint on a node"
    return [
        {
            "expression": f"{others.format(t=new)} == {others.format(t=old)}",
            "message": f"{same}: other taints must stay as they are",
            "reason": "Forbidden",
        },
        {
            "expression": f"{new}.filter(x, x.key == {literal(key)}).all(x, x.effect == 'NoSchedule' && "
            f"has(x.value) && x.value == {literal(GATE_TAINT_VALUE)})",
            "message": f"{same}: {key}={GATE_TAINT_VALUE}:NoSchedule",
            "reason": "Forbidden",
        },
        # The provider label is exempt: the node-label MutatingAdmissionPolicy sets it on any
        # update, so an update by the gate may carry it in when the node was created before
        # the policy was active.
        {
            "expression": (
                f"{same_map_except('labels', PROVIDER_LABEL)} && {same_map_except('annotations', '')}"
            ),
            "message": f"{same}: labels and annotations must stay as they are",
            "reason": "Forbidden",
        },
        {
            "expression": f"{field('object', 'spec', 'unschedulable', 'false')} == "
            f"{field('oldObject', 'spec', 'unschedulable', 'false')}",
            "message": f"{same}: it may not cordon or uncordon",
            "reason": "Forbidden",
        },
    ]


def virtual_kubelet_validations(key: str) -> list[dict[str, str]]:
    had = f"{taints('oldObject')}.exists(x, x.key == {literal(key)} && x.effect == 'NoSchedule')"
    has = f"{taints('object')}.exists(x, x.key == {literal(key)} && x.effect == 'NoSchedule')"
    return [
        {
            "expression": f"!{had} || {has}",
            "message": f"a virtual-kubelet may not remove the overflow gate taint {key}: only the "
            "gate controller opens a provider",
            "reason": "Forbidden",
        }
    ]


def node_guard_policies(ov: Overflow) -> list[Obj]:
    """Node updates by the gate and by the virtual-kubelets, limited beyond what RBAC can say."""
    key = ov.gate.taint_key
    gate = service_account(ov, GATE)
    virtual = sorted(service_account(ov, node) for node in ov.virtual_nodes)
    objects: list[Obj] = []
    for name, users, validations in (
        (GATE_NODE_POLICY, [gate], gate_node_validations(key)),
        (VK_NODE_POLICY, virtual, virtual_kubelet_validations(key)),
    ):
        objects += node_guard(name, f"request.userInfo.username in {literal(users)}", validations)
    return objects


def admission_objects(ov: Overflow, virtual_node: Mechanism = Mechanism.POLICY) -> list[Obj]:
    labelled = node_label_policy(ov) if virtual_node is Mechanism.POLICY else []
    return [*labelled, *toleration_policy(ov), *node_guard_policies(ov)]
