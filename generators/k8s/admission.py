"""The node-update guard: a ValidatingAdmissionPolicy on one or more identities (RBAC can
name the nodes a ServiceAccount may patch, not which fields it may change) and its binding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from generators.output.templating import render

Obj = dict[str, Any]


def binding(name: str, namespaces: Sequence[str] | None) -> Obj:
    """The ValidatingAdmissionPolicyBinding of policy `name` (Deny), in `namespaces` or, with
    None, everywhere."""
    return render("common/validatingadmissionpolicybinding.yaml.j2", name=name, namespaces=namespaces)


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
