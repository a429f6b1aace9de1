"""generators/upstream/rbac.py: the RBAC PolicyRule shape every rendered Role and ClusterRole
uses (rbac.authorization.k8s.io/v1 PolicyRule: apiGroups, resources, resourceNames, verbs)."""

from __future__ import annotations

from generators.upstream.rbac import lease_rules, rule


def test_a_rule_without_names_has_no_resource_names_key() -> None:
    assert rule([""], ["pods"], ["get", "list"]) == {
        "apiGroups": [""],
        "resources": ["pods"],
        "verbs": ["get", "list"],
    }


def test_a_rule_with_names_keeps_the_api_field_order() -> None:
    # The rendered YAML keeps insertion order: resourceNames between resources and verbs.
    found = rule(["apps"], ["deployments"], ["patch"], ["gate"])
    assert list(found) == ["apiGroups", "resources", "resourceNames", "verbs"]
    assert found["resourceNames"] == ["gate"]


def test_lease_rules_create_unnamed_then_the_named_lease() -> None:
    # create cannot be limited by resourceNames (the name is not known before the object is).
    assert lease_rules("overflow-gate", ["get", "update"]) == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["overflow-gate"],
            "verbs": ["get", "update"],
        },
    ]
