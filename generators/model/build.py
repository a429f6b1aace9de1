"""Validated, defaulted environment data -> Environment (the only constructor of the model)."""

from __future__ import annotations

from typing import Any

from generators import quantity
from generators.model.health import build_health, inference_tolerated_keys
from generators.model.monitoring import build_monitoring
from generators.model.overflow import build_overflow
from generators.model.quota import build_queues, split_by_placement
from generators.model.types import (
    ArgoCD,
    Cohort,
    Environment,
    KueueOptions,
    Pool,
    Preemption,
    ResourceKind,
    Taint,
    Team,
    Tier,
    WaitForPodsReady,
)
from generators.quantity import Format


def _pool(raw: dict[str, Any]) -> Pool:
    per_node = {
        raw["gpu"]["resource"]: quantity.parse(raw["gpu"]["perNode"]).value,
        "cpu": quantity.parse(raw["cpu"]).value,
        "memory": quantity.parse(raw["memory"]).value,
    }
    for name, count in sorted(raw["extraResources"].items()):
        per_node[name] = quantity.parse(count).value
    return Pool(
        name=raw["name"], role=raw["role"], gpu_model=raw["gpu"]["model"],
        gpu_resource=raw["gpu"]["resource"], gpus_per_node=raw["gpu"]["perNode"],
        nodes=raw["nodes"], reserve_nodes=raw["reserveNodes"], per_node=per_node,
        node_labels=dict(sorted(raw["nodeLabels"].items())),
        taints=tuple(Taint(t["key"], t.get("value"), t["effect"]) for t in raw["taints"]),
        topology_levels=tuple(raw.get("topology", {}).get("levels", ())),
    )


def _resources(raw_pools: list[dict[str, Any]]) -> tuple[ResourceKind, ...]:
    """coveredResources: GPU resources (pool order), cpu, memory, then extras by name.
    Every flavor of a ClusterQueue must list resources in exactly this order (a Kueue rule)."""
    gpus = list(dict.fromkeys(p["gpu"]["resource"] for p in raw_pools))
    extras = sorted({name for p in raw_pools for name in p["extraResources"]} - set(gpus))
    memory_format: Format = "binary" if all(
        quantity.parse(p["memory"]).format == "binary" for p in raw_pools) else "decimal"
    return (
        *(ResourceKind(g, "decimal") for g in gpus),
        ResourceKind("cpu", "decimal"),
        ResourceKind("memory", memory_format),
        *(ResourceKind(e, "decimal") for e in extras),
    )


def _kueue(raw: dict[str, Any], tiers: tuple[Tier, ...]) -> KueueOptions:
    wait = raw["waitForPodsReady"]
    preemption = raw["preemption"]
    return KueueOptions(
        namespace=raw["namespace"], queueing_strategy=raw["queueingStrategy"],
        configuration_delivery=raw["configurationDelivery"],
        integrations=tuple(raw["integrations"]),
        manage_jobs_without_queue_name=raw["manageJobsWithoutQueueName"],
        wait_for_pods_ready=WaitForPodsReady(
            timeout=wait["timeout"], recovery_timeout=wait["recoveryTimeout"],
            block_admission=wait["blockAdmission"], backoff_limit_count=wait["backoffLimitCount"],
            backoff_base_seconds=wait["backoffBaseSeconds"], backoff_max_seconds=wait["backoffMaxSeconds"],
        ),
        fair_sharing=raw["fairSharing"]["enabled"],
        fair_sharing_strategies=tuple(raw["fairSharing"]["preemptionStrategies"]),
        preemption=Preemption(
            reclaim_within_cohort=preemption["reclaimWithinCohort"],
            within_cluster_queue=preemption["withinClusterQueue"],
            borrow_within_cohort=preemption["borrowWithinCohort"],
            # Training may preempt, while borrowing, only what ranks as inference.
            borrow_max_priority=max(t.value for t in tiers if t.role == "inference"),
        ),
    )


def build(value: dict[str, Any], source_file: str) -> Environment:
    """The model of one environment. `value` must have passed spec.load_environment."""
    pools = tuple(_pool(p) for p in value["pools"])
    teams = tuple(
        Team(name=t["name"], namespaces=tuple(t["namespaces"]), cohort=t.get("cohort"),
             shares=dict(t["shares"]), borrow_from=tuple(t["borrowFrom"]),
             max_usage_percent=t.get("maxUsagePercent"),
             lendable_percent=t.get("lendablePercent"), fair_sharing_weight=t.get("fairSharingWeight"))
        for t in value["teams"]
    )
    tiers = tuple(
        Tier(name=t["name"], role=t["role"], value=t["value"],
             preemption_policy=t["preemptionPolicy"],
             description=t["description"])
        for t in value["priorities"]["tiers"]
    )
    resources = _resources(value["pools"])
    queues = build_queues(pools, teams, resources)
    monitoring = build_monitoring(value["monitoring"])
    health = build_health(value["health"], pools, monitoring)
    argo = value["cluster"]["argocd"]
    return Environment(
        name=value["name"],
        display_name=value["cluster"].get("displayName", value["name"]),
        source_file=source_file,
        kubernetes_version=value["cluster"]["kubernetesVersion"],
        argocd=ArgoCD(namespace=argo["namespace"], project=argo["project"], repo_url=argo["repoURL"],
                      target_revision=argo["targetRevision"],
                      destination_server=argo["destinationServer"],
                      automated=argo["syncPolicy"] == "automated"),
        pools=pools,
        cohorts=tuple(Cohort(c["name"], c.get("parent"), c.get("fairSharingWeight"))
                      for c in value["cohorts"]),
        teams=teams,
        tiers=tiers,
        kueue=_kueue(value["kueue"], tiers),
        resources=resources,
        queues=queues,
        cluster_queues=tuple(q for t in teams for q in split_by_placement(t, queues[t.name], pools)),
        monitoring=monitoring,
        overflow=build_overflow(value.get("overflow"), pools, monitoring, tiers,
                                inference_tolerated_keys(health)),
        health=health,
    )
