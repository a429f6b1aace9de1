"""Kubernetes' RBAC PolicyRule (rbac.authorization.k8s.io/v1): the shape every rule the project
renders is written in.

It imports nothing of the renderer, so the providers' contracts (which state the
rules their programs need, and which the model reads) and k8s/rbac (which renders Roles
and ClusterRoles from them) share one shape without the providers importing a renderer
package. Here, with the other upstream facts, it sits below the providers in
tests/test_import_graph.py's layers.
"""

from __future__ import annotations

from typing import Any

Rule = dict[str, Any]


def rule(groups: list[str], resources: list[str], verbs: list[str], names: list[str] | None = None) -> Rule:
    """One RBAC PolicyRule (resourceNames only where the verb allows it)."""
    found: Rule = {"apiGroups": groups, "resources": resources}
    if names:
        found["resourceNames"] = names
    found["verbs"] = verbs
    return found


def lease_rules(name: str, verbs: list[str]) -> list[Rule]:
    """The client's LeaseLock creates its one Lease (create cannot be limited by name), then
    reads and replaces it by name."""
    return [
        rule(["coordination.k8s.io"], ["leases"], ["create"]),
        rule(["coordination.k8s.io"], ["leases"], verbs, [name]),
    ]
