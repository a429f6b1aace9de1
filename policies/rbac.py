"""Least privilege in the RBAC we ship.

No wildcard verbs, resources or apiGroups (a wildcard silently grows with every CRD the
cluster installs); no binding to cluster-admin; and Secrets readable only by the
ServiceAccounts listed in SECRET_READERS, by the component (label trainyard.dev/component)
of the binding that grants it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from policies.context import Context, Finding, RenderedObject

ID = "rbac"
RATIONALE = (
    "wildcards and cluster-admin grant more than any controller needs, and Secret read "
    "access must be a deliberate, reviewed exception per ServiceAccount"
)
SEVERITY = "error"
ROLE_KINDS = ("Role", "ClusterRole")
BINDING_KINDS = ("RoleBinding", "ClusterRoleBinding")
READ_VERBS = frozenset({"get", "list", "watch", "*"})
# component -> ServiceAccount names (fnmatch patterns) that may read Secrets. Adding one
# here is the review point: say why that controller needs Secrets.
SECRET_READERS: Mapping[str, tuple[str, ...]] = {
    # A virtual-kubelet (one per external provider, ServiceAccount vk-<provider>) is the
    # kubelet of its virtual node: it hands the Secrets its pods mount to the provider, as a
    # real kubelet does, without the node authorizer to narrow that down.
    "overflow": ("vk-*",),
}


def check(ctx: Context) -> Iterable[Finding]:
    for item in ctx.of_kind(*ROLE_KINDS):
        yield from _wildcards(item)
    secret_roles = {
        (i.kind, i.namespace if i.kind == "Role" else None, i.name)
        for i in ctx.of_kind(*ROLE_KINDS)
        if _reads_secrets(i)
    }
    for item in ctx.of_kind(*BINDING_KINDS):
        ref: Mapping[str, Any] = item.obj.get("roleRef") or {}
        if ref.get("name") == "cluster-admin":
            yield item.finding("binds cluster-admin; grant the verbs and resources the subject needs")
            continue
        ref_kind = str(ref.get("kind", ""))
        namespace = item.namespace if ref_kind == "Role" else None
        if (ref_kind, namespace, ref.get("name")) in secret_roles:
            yield from _secret_subjects(item, f"{ref_kind} {ref.get('name')}")


def _rules(item: RenderedObject) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for index, rule in enumerate(item.obj.get("rules") or []):
        if isinstance(rule, Mapping):
            yield index, rule


def _wildcards(item: RenderedObject) -> Iterator[Finding]:
    for index, rule in _rules(item):
        for field in ("verbs", "resources", "apiGroups", "nonResourceURLs"):
            values = [str(v) for v in rule.get(field) or []]
            if any(v == "*" or v.endswith("/*") for v in values):
                yield item.finding(f"rules[{index}].{field} contains a wildcard; list what is needed")


def _reads_secrets(item: RenderedObject) -> bool:
    for _, rule in _rules(item):
        groups = {str(g) for g in rule.get("apiGroups") or []}
        resources = {str(r) for r in rule.get("resources") or []}
        verbs = {str(v) for v in rule.get("verbs") or []}
        if groups & {"", "*"} and resources & {"secrets", "*"} and verbs & READ_VERBS:
            return True
    return False


def _secret_subjects(item: RenderedObject, role: str) -> Iterator[Finding]:
    allowed = SECRET_READERS.get(item.component, ())
    for subject in item.obj.get("subjects") or []:
        kind, name = subject.get("kind"), subject.get("name")
        if kind != "ServiceAccount":
            yield item.finding(
                f"{role} can read Secrets and is bound to {kind} {name!r}; "
                "only ServiceAccounts in policies/rbac.py SECRET_READERS may read Secrets"
            )
        elif not any(fnmatch.fnmatchcase(str(name), pattern) for pattern in allowed):
            yield item.finding(
                f"{role} can read Secrets and is bound to ServiceAccount {name!r}, which is not in "
                f"SECRET_READERS[{item.component!r}] (policies/rbac.py)"
            )
