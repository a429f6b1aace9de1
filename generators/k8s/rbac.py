"""RBAC: one rule shape, a workload's identity, its namespaced Role, the Lease grant."""

from __future__ import annotations

from typing import Any

from generators.k8s.objects import Obj
from generators.output.templating import render

Rule = dict[str, Any]

CLUSTER_PREFIX = "trainyard-"  # cluster-scoped names: say whose they are


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


def cluster_role(name: str, rules: list[Rule]) -> Obj:
    return render("common/clusterrole.yaml.j2", name=name, rules=rules)


def role_binding(
    name: str,
    account: str,
    namespace: str,
    *,
    subject_namespace: str | None = None,
    cluster_role: bool = False,
) -> Obj:
    """RoleBinding `name` in `namespace` of Role (or ClusterRole) `name` to ServiceAccount
    `account` of `subject_namespace` (default: the same namespace)."""
    return render(
        "common/rolebinding.yaml.j2",
        name=name,
        account=account,
        namespace=namespace,
        subject_namespace=subject_namespace or namespace,
        kind="ClusterRole" if cluster_role else "Role",
    )


def identity(account: str, namespace: str, cluster_name: str, rules: list[Rule]) -> list[Obj]:
    """ServiceAccount + ClusterRole + ClusterRoleBinding of one workload."""
    return [
        render("common/serviceaccount.yaml.j2", name=account, namespace=namespace),
        cluster_role(cluster_name, rules),
        render("common/clusterrolebinding.yaml.j2", name=cluster_name, account=account, namespace=namespace),
    ]


def namespaced(name: str, namespace: str, rules: list[Rule]) -> list[Obj]:
    """Role + RoleBinding `name` in the workload's own namespace, for its ServiceAccount `name`."""
    return [
        render("common/role.yaml.j2", name=name, namespace=namespace, rules=rules),
        role_binding(name, name, namespace),
    ]
