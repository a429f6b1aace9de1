"""rendered/<env>/priorities/: per tier a PriorityClass and a WorkloadPriorityClass with the
tier's one value, and the admission policies that keep training pods at a training tier.

Why two policies: kube-apiserver's admission order (pkg/kubeapiserver/options/plugins.go in
kubernetes v1.36: Priority before MutatingAdmissionPolicy before ValidatingAdmissionPolicy)
resolves a pod's priority from its class before any policy runs, and the Priority plugin
(plugin/pkg/admission/priority/admission.go) refuses a pod whose spec.priority disagrees with
its class. So the mutating policy defaults class, value and preemption policy together, and
the validating one, which runs last, refuses any other class in a training namespace.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from generators.components import Obj
from generators.model.types import Environment
from generators.templating import render

POLICY = "trainyard-training-priority"


def _cel(value: str) -> str:
    """A CEL string literal (JSON's escaping is valid CEL)."""
    return json.dumps(value)


def admission(env: Environment) -> list[Obj]:
    namespaces = env.training_namespaces
    if not namespaces:
        return []
    tier = env.default_training_tier
    allowed = [t.name for t in env.training_tiers]
    apply = (f"Object{{spec: Object.spec{{priorityClassName: {_cel(tier.name)}, priority: {tier.value}, "
             f"preemptionPolicy: {_cel(tier.preemption_policy)}}}}}")
    names = "[" + ", ".join(_cel(n) for n in allowed) + "]"
    message = (f"'pods in training namespaces run at a training tier ({', '.join(allowed)}); got ' + "
               "(has(object.spec.priorityClassName) ? object.spec.priorityClassName : 'none') + "
               f"': remove priorityClassName to get {tier.name}, or name a training tier'")
    return [
        render("priorities/mutatingadmissionpolicy.yaml.j2", name=POLICY, apply_expression=apply),
        render("priorities/mutatingadmissionpolicybinding.yaml.j2", name=POLICY, namespaces=namespaces),
        render("priorities/validatingadmissionpolicy.yaml.j2", name=POLICY,
               expression=f"has(object.spec.priorityClassName) && object.spec.priorityClassName in {names}",
               message_expression=message),
        render("priorities/validatingadmissionpolicybinding.yaml.j2", name=POLICY, namespaces=namespaces),
    ]


def generate(env: Environment, earlier: Sequence[Obj] = ()) -> list[Obj]:
    objects: list[Obj] = []
    for tier in env.tiers:
        objects.append(render("priorities/priorityclass.yaml.j2", tier=tier))
        objects.append(render("priorities/workloadpriorityclass.yaml.j2", tier=tier))
    return objects + admission(env)
