"""Admission policy bindings, and the node-update guard: a ValidatingAdmissionPolicy on one
or more identities (RBAC can name the nodes a ServiceAccount may patch, not which fields it
may change) and its binding."""

from __future__ import annotations

from collections.abc import Sequence

from generators.k8s.objects import Obj
from generators.output.templating import render


def binding(name: str, namespaces: Sequence[str] | None, action: str = "Deny") -> Obj:
    """The ValidatingAdmissionPolicyBinding of policy `name` (validationActions [`action`]:
    Deny refuses, Warn admits with a warning), in `namespaces` or, with None, everywhere."""
    return render(
        "common/validatingadmissionpolicybinding.yaml.j2", name=name, namespaces=namespaces, action=action
    )


def mutating_binding(name: str, namespaces: Sequence[str] | None) -> Obj:
    """The MutatingAdmissionPolicyBinding of policy `name`, in `namespaces` or, with None,
    everywhere (the policy's own matchConstraints and matchConditions still apply)."""
    return render("common/mutatingadmissionpolicybinding.yaml.j2", name=name, namespaces=namespaces)


def tolerations_policy(name: str, validations: list[dict[str, str]]) -> Obj:
    """A ValidatingAdmissionPolicy on pod CREATE and UPDATE (tolerations can be added to a
    running pod): the pod's tolerations (`variables.tolerations`, [] when none) must pass
    every validation. Bind it with `binding`."""
    return render("common/tolerations-validatingadmissionpolicy.yaml.j2", name=name, validations=validations)


def node_guard(name: str, match_expression: str, validations: list[dict[str, str]]) -> list[Obj]:
    """Node UPDATEs by the users `match_expression` selects must pass every validation."""
    return [
        render(
            "common/nodeguardpolicy.yaml.j2",
            name=name,
            validations=validations,
            match_expression=match_expression,
        ),
        binding(name, None),
    ]
