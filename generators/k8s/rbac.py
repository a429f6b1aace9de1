"""RBAC objects: a workload's identity, its namespaced Role (rules in generators/upstream/rbac.py's shape)."""

from __future__ import annotations

from generators.k8s.objects import Obj
from generators.output.templating import render
from generators.upstream.rbac import Rule

CLUSTER_PREFIX = "trainyard-"  # cluster-scoped names: say whose they are


def cluster_role(name: str, rules: list[Rule]) -> Obj:
    return render("common/clusterrole.yaml.j2", name=name, rules=rules)


def role_binding(
    name: str,
    account: str,
    namespace: str,
    *,
    subject_namespace: str | None = None,
    cluster_role: bool = False,
    role: str | None = None,
) -> Obj:
    """RoleBinding `name` in `namespace` of Role (or ClusterRole) `role` (default: `name`) to
    ServiceAccount `account` of `subject_namespace` (default: the same namespace)."""
    return render(
        "common/rolebinding.yaml.j2",
        name=name,
        account=account,
        namespace=namespace,
        subject_namespace=subject_namespace or namespace,
        kind="ClusterRole" if cluster_role else "Role",
        role=role or name,
    )


def service_account(name: str, namespace: str, labels: dict[str, str] | None = None) -> Obj:
    return render("common/serviceaccount.yaml.j2", name=name, namespace=namespace, labels=labels)


def cluster_role_binding(name: str, account: str, namespace: str, role: str | None = None) -> Obj:
    """ClusterRoleBinding `name` of ClusterRole `role` (default: `name`) to ServiceAccount
    `account` of `namespace`."""
    return render(
        "common/clusterrolebinding.yaml.j2",
        name=name,
        account=account,
        namespace=namespace,
        role=role or name,
    )


def identity(account: str, namespace: str, cluster_name: str, rules: list[Rule]) -> list[Obj]:
    """ServiceAccount + ClusterRole + ClusterRoleBinding of one workload."""
    return [
        service_account(account, namespace),
        cluster_role(cluster_name, rules),
        cluster_role_binding(cluster_name, account, namespace),
    ]


def namespaced(name: str, namespace: str, rules: list[Rule]) -> list[Obj]:
    """Role + RoleBinding `name` in the workload's own namespace, for its ServiceAccount `name`."""
    return [
        render("common/role.yaml.j2", name=name, namespace=namespace, rules=rules),
        role_binding(name, name, namespace),
    ]
