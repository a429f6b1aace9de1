"""Fields the API refuses to change in place, in one table, and what a change to one needs.

A change to any of these fields fails a plain apply (the API answers 422 Invalid), so the
Argo CD sync of that object's wave fails and no later wave is applied. `Replace=true` does
not help: a replace is an update, and updates are what the API validates. Per kind, the
decision (docs/immutable-fields.md):

- `recreate`: Argo CD deletes and recreates the object (`Force=true,Replace=true`, rendered
  on every object of the kind by generators/gitops/syncoptions.py). Only where that is safe: a
  PriorityClass has no finalizer, and running pods keep the integer priority they were
  admitted with (`spec.priority`).
- `refuse`: `generate.py diff` refuses the change at the spec line with the migration path.
  Delete-and-recreate would hang or hurt: Kueue holds a ResourceFlavor in use by a
  ClusterQueue, and a Topology in use by a flavor, with its `resource-in-use` finalizer
  (the queues that release them are synced in a later wave), and a Deployment or binding
  recreated in place drops its pods or its permissions for the gap.

Checked against the pinned sources: every `oldSelf` rule of the pinned Kueue CRDs on a kind
we render is in RULES (tests/gitops/test_immutable.py), and the real kube-apiserver and
Kueue refuse a change to each rule's field that staging renders, 10 of the 12 (scene
immutable-change on the box; the ClusterQueue and DaemonSet rules are not rendered).
Not immutable (checked, so not listed): WorkloadPriorityClass `value` (no CEL rule, no
webhook), Cohort (its webhook validates the new object only), the rest of ClusterQueue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from generators.errors import Location, Problem, format_path
from generators.k8s.objects import Obj

Path = tuple[str | int, ...]
Procedure = Literal["recreate", "refuse"]
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()

DOC = "docs/immutable-fields.md"
POOL_RENAME = (
    "rename the pool in the same change (e.g. {name} -> {name}-v2, with its shares and borrowFrom "
    "entries): Argo CD creates the new flavor and topology in wave 1, moves the ClusterQueues to "
    f"them in wave 2 and prunes the old ones last, once Kueue releases them ({DOC})"
)


@dataclass(frozen=True)
class Rule:
    group: str  # API group, "" for the core group
    kind: str
    path: tuple[str, ...]  # the field, from the object's root
    enforced_by: str  # the upstream file (pinned version) that refuses the change
    procedure: Procedure
    how: str  # recreate: why a recreate is safe; refuse: the migration path ({name}: the object)
    only_if_old_has: tuple[str, ...] = ()  # the rule applies only when the old object has this

    def applies(self, before: Obj) -> bool:
        return not self.only_if_old_has or value_at(before, self.only_if_old_has) is not MISSING


KUEUE_CRDS = "../shared/crds/kueue-v0.19.2"
KUBE = "k8s.io/kubernetes v1.36.5 pkg/apis"


def _frozen_with_topology(field: str, line: int) -> Rule:
    """A ResourceFlavor field Kueue's CRD freezes once spec.topologyName is set: one CEL rule
    per field (at `line`), all refused and migrated the same way, by a pool rename."""
    return Rule(
        "kueue.x-k8s.io",
        "ResourceFlavor",
        ("spec", field),
        f"{KUEUE_CRDS}/kueue.x-k8s.io_resourceflavors.yaml:{line} (CEL, when topologyName is set)",
        "refuse",
        POOL_RENAME,
        ("spec", "topologyName"),
    )


RULES: tuple[Rule, ...] = (
    Rule(
        "scheduling.k8s.io",
        "PriorityClass",
        ("value",),
        f"{KUBE}/scheduling/validation/validation.go:63 (value: may not be changed in an update)",
        "recreate",
        "running pods keep the priority they were admitted with; pods created in the "
        "gap are refused by the Priority admission plugin and retried by their controllers",
    ),
    Rule(
        "scheduling.k8s.io",
        "PriorityClass",
        ("preemptionPolicy",),
        f"{KUBE}/scheduling/validation/validation.go:67 (field is immutable)",
        "recreate",
        "running pods keep the preemption policy they were admitted with",
    ),
    Rule(
        "kueue.x-k8s.io",
        "Topology",
        ("spec", "levels"),
        f"{KUEUE_CRDS}/kueue.x-k8s.io_topologies.yaml:137 (CEL self == oldSelf)",
        "refuse",
        POOL_RENAME,
    ),
    *(
        _frozen_with_topology(field, line)
        for field, line in (("nodeLabels", 374), ("tolerations", 377), ("topologyName", 380))
    ),
    Rule(
        "kueue.x-k8s.io",
        "LocalQueue",
        ("spec", "clusterQueue"),
        f"{KUEUE_CRDS}/kueue.x-k8s.io_localqueues.yaml:475 (CEL self == oldSelf)",
        "refuse",
        "add a LocalQueue under a new name for the new ClusterQueue, move the Jobs' "
        "kueue.x-k8s.io/queue-name to it, then remove {name} once no Workload names it "
        f"(a recreate in place leaves the Workloads that name it inadmissible in the gap; {DOC})",
    ),
    Rule(
        "kueue.x-k8s.io",
        "ClusterQueue",
        ("spec", "concurrentAdmissionPolicy"),
        "sigs.k8s.io/kueue v0.19.2 pkg/webhooks/clusterqueue_webhook.go:105 (field is immutable)",
        "refuse",
        "a ClusterQueue under a new name, its LocalQueues moved to it, then remove {name}",
    ),
    Rule(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        ("roleRef",),
        f"{KUBE}/rbac/validation/validation.go:166 (cannot change roleRef)",
        "refuse",
        "render the binding under a new name; Argo CD creates it and prunes {name} "
        "(a recreate in place leaves its subjects without the role in the gap)",
    ),
    Rule(
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        ("roleRef",),
        f"{KUBE}/rbac/validation/validation.go:210 (cannot change roleRef)",
        "refuse",
        "render the binding under a new name; Argo CD creates it and prunes {name} "
        "(a recreate in place leaves its subjects without the role in the gap)",
    ),
    Rule(
        "apps",
        "Deployment",
        ("spec", "selector"),
        f"{KUBE}/apps/validation/validation.go:712 (field is immutable)",
        "refuse",
        "render the Deployment under a new name; Argo CD starts it and prunes {name} "
        "last (a recreate in place deletes its pods first)",
    ),
    Rule(
        "apps",
        "DaemonSet",
        ("spec", "selector"),
        f"{KUBE}/apps/validation/validation.go:403 (field is immutable)",
        "refuse",
        "render the DaemonSet under a new name; Argo CD starts it and prunes {name} last",
    ),
)

# Kinds whose every immutable field is recreated: generators/gitops/syncoptions.py renders
# Force=true,Replace=true on each of their objects (and on no other object).
RECREATE_KINDS: frozenset[tuple[str, str]] = frozenset(
    (r.group, r.kind)
    for r in RULES
    if all(o.procedure == "recreate" for o in RULES if (o.group, o.kind) == (r.group, r.kind))
)


def group_of(obj: Obj) -> str:
    return str(obj.get("apiVersion", "")).rpartition("/")[0]


def value_at(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return MISSING
        obj = obj[part]
    return obj


@dataclass(frozen=True)
class ImmutableChange:
    rule: Rule
    kind: str
    name: str
    namespace: str
    before: Any
    after: Any
    rendered_path: str  # rendered/<env>/...: where the object is

    @property
    def field(self) -> str:
        return format_path(self.rule.path)

    def show(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where} {self.field} {_brief(self.before)} -> {_brief(self.after)}"


def _brief(value: Any) -> str:
    """A value as a reader recognises it from the spec: `[rack, hostname]` for a Topology's
    levels ({nodeLabel: x} items show x), `{key: value}` for a map."""
    if value is MISSING:
        return "<unset>"
    if isinstance(value, list):
        return "[" + ", ".join(_brief(v) for v in value) + "]"
    if isinstance(value, dict):
        if len(value) == 1 and not isinstance(next(iter(value.values())), (dict, list)):
            return (
                str(next(iter(value.values())))
                if list(value) in (["nodeLabel"], ["name"])
                else f"{{{next(iter(value))}: {next(iter(value.values()))}}}"
            )
        return "{" + ", ".join(f"{k}: {_brief(v)}" for k, v in value.items()) + "}"
    return str(value)


def changes(before: Obj, after: Obj, rendered_path: str) -> list[ImmutableChange]:
    """The immutable fields that differ between two versions of one object."""
    found = []
    meta = after.get("metadata") or {}
    for rule in RULES:
        if (group_of(after), after.get("kind")) != (rule.group, rule.kind) or not rule.applies(before):
            continue
        old, new = value_at(before, rule.path), value_at(after, rule.path)
        if old != new:
            found.append(
                ImmutableChange(
                    rule,
                    rule.kind,
                    str(meta.get("name", "")),
                    str(meta.get("namespace") or ""),
                    old,
                    new,
                    rendered_path,
                )
            )
    return found


def _index(items: Any, match: Callable[[Any], bool]) -> int | None:
    return (
        next((i for i, item in enumerate(items or []) if match(item)), None)
        if isinstance(items, list)
        else None
    )


def spec_path(change: ImmutableChange, spec: Obj) -> Path | None:
    """Where in the (merged) environment file the field comes from; None: made by the code."""
    field = change.rule.path[-1]
    if change.kind == "PriorityClass":
        tiers = (spec.get("priorities") or {}).get("tiers")
        i = _index(tiers, lambda t: isinstance(t, dict) and t.get("name") == change.name)
        return None if i is None else ("priorities", "tiers", i, field)
    if change.kind in ("Topology", "ResourceFlavor"):
        i = _index(spec.get("pools"), lambda p: isinstance(p, dict) and p.get("name") == change.name)
        if i is None:
            return None
        return (
            "pools",
            i,
            *{
                "levels": ("topology", "levels"),
                "nodeLabels": ("nodeLabels",),
                "tolerations": ("taints",),
                "topologyName": ("topology",),
            }[field],
        )
    return None


def problem(change: ImmutableChange, location: Location | None, spec_at: Path | None) -> Problem:
    """One line: an error with the migration path (refuse), or a note of the procedure (recreate)."""
    rule = change.rule
    where = location or Location(change.rendered_path)
    spec = format_path(spec_at) if spec_at is not None else ""
    if rule.procedure == "recreate":
        return Problem(
            where,
            f"{change.show()}: immutable, so Argo CD deletes and recreates it (Force=true,Replace=true)",
            spec,
            rule.how,
            severity="note",
        )
    return Problem(
        where,
        f"{change.show()}: the API refuses this change in place ({rule.enforced_by}), "
        "so the Argo CD sync would stop at its wave",
        spec,
        rule.how.format(name=change.name),
    )
