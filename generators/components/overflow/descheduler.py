"""Migrate-back: the descheduler evicts pods from closed providers' virtual nodes.

The DeschedulerPolicy's plugin args follow descheduler v0.36.0's own types (sigs.k8s.io/
descheduler@v0.36.0): RemovePodsViolatingNodeTaintsArgs
(pkg/framework/plugins/removepodsviolatingnodetaints/types.go: includedTaints, namespaces =
pkg/api/types.go Namespaces{include, exclude}; validation.go refuses include with exclude)
and DefaultEvictorArgs (pkg/framework/plugins/defaultevictor/types.go: priorityThreshold =
pkg/api/types.go PriorityThreshold{value, name}, one of the two; nodeFit, minPodAge,
podProtections). Only pods with priority < priorityThreshold are evicted
(defaultevictor.go IsPodEvictableBasedOnPriority), and only while the SystemCriticalPods
protection is on (defaultevictor.go applySystemCriticalPodsProtection).
"""

from __future__ import annotations

from generators.k8s.hardening import hardened
from generators.k8s.objects import Obj, config_map
from generators.k8s.rbac import CLUSTER_PREFIX, identity, namespaced
from generators.k8s.workload import POLICY_FILE, sha256
from generators.model.overflow import Overflow
from generators.output import yamlemit
from generators.output.templating import render
from generators.upstream.rbac import lease_rules, rule

DESCHEDULER = "descheduler"
DESCHEDULER_METRICS_PORT = 10258
DESCHEDULER_RULES = [
    rule(["", "events.k8s.io"], ["events"], ["create", "update"]),
    rule([""], ["nodes", "namespaces", "pods"], ["get", "list", "watch"]),
    rule([""], ["pods/eviction"], ["create"]),
    rule(["scheduling.k8s.io"], ["priorityclasses"], ["get", "list", "watch"]),
    rule(["policy"], ["poddisruptionbudgets"], ["get", "list", "watch"]),
    rule([""], ["persistentvolumeclaims"], ["get", "list", "watch"]),
]
# Only used if leader election is ever turned on; own namespace only.
DESCHEDULER_LEASE_RULES = lease_rules(DESCHEDULER, ["get", "update", "patch"])


def descheduler_policy(ov: Overflow) -> Obj:
    return render(
        "overflow/deschedulerpolicy.yaml.j2", back=ov.migrate_back, included_taints=[ov.gate.taint_key]
    )


def descheduler_objects(ov: Overflow) -> list[Obj]:
    back = ov.migrate_back
    policy = yamlemit.dump(descheduler_policy(ov))
    args = [
        f"--policy-config-file=/policy-dir/{POLICY_FILE}",
        f"--descheduling-interval={back.descheduling_interval}",
        "--v=3",
    ]
    if back.dry_run:
        args.append("--dry-run")
    return [
        *identity(DESCHEDULER, ov.namespace, CLUSTER_PREFIX + DESCHEDULER, DESCHEDULER_RULES),
        *namespaced(DESCHEDULER, ov.namespace, DESCHEDULER_LEASE_RULES),
        config_map(DESCHEDULER, ov.namespace, {POLICY_FILE: policy}),
        render(
            "overflow/descheduler-deployment.yaml.j2",
            name=DESCHEDULER,
            namespace=ov.namespace,
            back=back,
            args=args,
            policy_sha256=sha256(policy),
            **hardened(back.resources),
        ),
    ]
