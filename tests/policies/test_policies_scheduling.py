"""Policies about scheduling and apply order (quota-conservation, references, priorities,
kueue-rules, sync-waves): a small break of a copied rendered tree makes `validate` exit 1
with the expected line, and nothing else but the staleness findings the edit causes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .conftest import DEV, STAGING, Repo, Validate, expect, hardened_deployment

# quota-conservation ----------------------------------------------------------------------


def test_quota_above_pool_capacity(repo: Repo, validate: Validate) -> None:
    def grow(cq: dict[str, Any]) -> None:
        cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "10"

    repo.edit(f"{DEV}/kueue/clusterqueue-platform.yaml", grow)
    expect(
        validate(repo.root, "dev"),
        f"{DEV}/kueue/resourceflavor-dev-a100.yaml: ResourceFlavor/dev-a100: quota-conservation: "
        "nvidia.com/gpu: nominal quotas sum to 18, above the 16 that 4 schedulable nodes of pool "
        "dev-a100 back (ClusterQueue platform 10, ClusterQueue sandbox 8)",
    )


def test_cohort_quota_counts(repo: Repo, validate: Validate) -> None:
    def lend(cohort: dict[str, Any]) -> None:
        cohort["spec"] = {
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "dev-a100", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
                }
            ]
        }

    repo.edit(f"{DEV}/kueue/cohort-dev.yaml", lend)
    expect(
        validate(repo.root, "dev"),
        f"{DEV}/kueue/resourceflavor-dev-a100.yaml: ResourceFlavor/dev-a100: quota-conservation: "
        "cpu: nominal quotas sum to 385, above the 384 that 4 schedulable nodes of pool dev-a100 "
        "back (ClusterQueue platform 192, ClusterQueue sandbox 192, Cohort dev 1)",
    )


# references ------------------------------------------------------------------------------


def test_local_queue_names_missing_cluster_queue(repo: Repo, validate: Validate) -> None:
    repo.edit(
        f"{DEV}/kueue/sandbox/localqueue-sandbox.yaml", lambda lq: lq["spec"].update(clusterQueue="sandbx")
    )
    expect(
        validate(repo.root, "dev"),
        f"{DEV}/kueue/sandbox/localqueue-sandbox.yaml: LocalQueue/sandbox: references: "
        "spec.clusterQueue names ClusterQueue 'sandbx', which this environment does not render "
        "(known: platform, sandbox)",
    )


def test_covered_resources_order(repo: Repo, validate: Validate) -> None:
    def swap(cq: dict[str, Any]) -> None:
        resources = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        resources[1], resources[2] = resources[2], resources[1]

    repo.edit(f"{DEV}/kueue/clusterqueue-platform.yaml", swap)
    expect(
        validate(repo.root, "dev"),
        f"{DEV}/kueue/clusterqueue-platform.yaml: ClusterQueue/platform: references: "
        "spec.resourceGroups[0].flavors[0].resources lists ['nvidia.com/gpu', 'memory', 'cpu'] "
        "but coveredResources is ['nvidia.com/gpu', 'cpu', 'memory']: Kueue requires the same "
        "resources in the same order",
    )


def test_missing_flavor_and_priority_classes(repo: Repo, validate: Validate) -> None:
    (repo.root / DEV / "kueue/resourceflavor-dev-a100.yaml").unlink()
    deployment = hardened_deployment("batch", "sandbox")
    pod = deployment["spec"]["template"]
    pod["spec"]["priorityClassName"] = "training-urgent"
    pod["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "inference-bulk"
    repo.write(f"{DEV}/fixture/sandbox/deployment-batch.yaml", deployment)
    known = "(known: inference-batch, inference-prod, training, training-critical)"
    ref = (
        f"{DEV}/kueue/clusterqueue-%s.yaml: ClusterQueue/%s: references: spec.resourceGroups[0]"
        ".flavors[0].name names ResourceFlavor 'dev-a100', which this environment does not render"
    )
    where = f"{DEV}/fixture/sandbox/deployment-batch.yaml: Deployment/batch: references: "
    run = validate(repo.root, "dev")
    expect(
        run,
        ref % ("platform", "platform"),
        ref % ("sandbox", "sandbox"),
        f"{where}spec.template.spec.priorityClassName names PriorityClass 'training-urgent', "
        f"which this environment does not render {known}",
        f"{where}spec.template.metadata.labels[kueue.x-k8s.io/priority-class] names "
        f"WorkloadPriorityClass 'inference-bulk', which this environment does not render {known}",
    )
    # quota conservation still sees the quota, now held by a flavor that is not rendered
    assert run.findings("quota-conservation") == []


# priorities ------------------------------------------------------------------------------


def test_inference_above_training(repo: Repo, validate: Validate) -> None:
    repo.edit(
        f"{DEV}/priorities/workloadpriorityclass-inference-prod.yaml", lambda wpc: wpc.update(value=950000)
    )
    where = (
        f"{DEV}/priorities/workloadpriorityclass-inference-prod.yaml: WorkloadPriorityClass/inference-prod"
    )
    expect(
        validate(repo.root, "dev"),
        f"{where}: priorities: inference tier value 950000 is not below "
        "training tier 'training' (900000): training must preempt inference, not the reverse",
        f"{where}: priorities: value 950000 differs from PriorityClass 'inference-prod' (100000): "
        "Kueue ranks a job by either, so one tier must have one value",
    )


def test_one_scale_per_tier(repo: Repo, validate: Validate) -> None:
    """The 10/100/500/1000 vs 10000..1000000 split this project once shipped: a job with only
    `priorityClassName: training` outranked one labelled `training-critical`."""

    def old_value(value: int) -> Callable[[dict[str, Any]], None]:
        return lambda wpc: wpc.update(value=value)

    for tier, old in (
        ("training-critical", 1000),
        ("training", 500),
        ("inference-prod", 100),
        ("inference-batch", 10),
    ):
        repo.edit(f"{DEV}/priorities/workloadpriorityclass-{tier}.yaml", old_value(old))
    run = validate(repo.root, "dev")
    assert run.code == 1
    assert sorted(run.findings("priorities")) == sorted(
        f"{DEV}/priorities/workloadpriorityclass-{tier}.yaml: WorkloadPriorityClass/{tier}: priorities: "
        f"value {old} differs from PriorityClass {tier!r} ({new}): Kueue ranks a job by either, so one "
        "tier must have one value"
        for tier, old, new in (
            ("training-critical", 1000, 1000000),
            ("training", 500, 900000),
            ("inference-prod", 100, 100000),
            ("inference-batch", 10, 10000),
        )
    )


def test_priority_limits_and_uniqueness(repo: Repo, validate: Validate) -> None:
    repo.edit(
        f"{DEV}/priorities/priorityclass-training-critical.yaml", lambda pc: pc.update(value=2_000_000_000)
    )
    repo.edit(f"{DEV}/priorities/priorityclass-inference-batch.yaml", lambda pc: pc.update(value=100000))
    prefix = f"{DEV}/priorities/priorityclass-"
    twin = f"{DEV}/priorities/workloadpriorityclass-"
    expect(
        validate(repo.root, "dev"),
        f"{prefix}training-critical.yaml: PriorityClass/training-critical: priorities: "
        "value 2000000000 is outside [-2147483648, 1000000000]",
        f"{prefix}inference-prod.yaml: PriorityClass/inference-prod: priorities: value 100000 "
        "equals PriorityClass 'inference-batch': equal tiers cannot preempt each other",
        f"{twin}training-critical.yaml: WorkloadPriorityClass/training-critical: priorities: value "
        "1000000 differs from PriorityClass 'training-critical' (2000000000): Kueue ranks a job by "
        "either, so one tier must have one value",
        f"{twin}inference-batch.yaml: WorkloadPriorityClass/inference-batch: priorities: value "
        "10000 differs from PriorityClass 'inference-batch' (100000): Kueue ranks a job by "
        "either, so one tier must have one value",
    )


# sync-waves ------------------------------------------------------------------------------


def test_sync_waves(repo: Repo, validate: Validate) -> None:
    repo.edit(
        f"{DEV}/kueue/sandbox/localqueue-sandbox.yaml",
        lambda lq: lq["metadata"]["annotations"].update({"argocd.argoproj.io/sync-wave": "2"}),
    )
    repo.edit(
        f"{DEV}/kueue/platform-dev/localqueue-platform.yaml",
        lambda lq: lq["metadata"]["annotations"].update({"argocd.argoproj.io/sync-wave": "0"}),
    )
    repo.edit(
        f"{DEV}/monitoring/monitoring/configmap-trainyard-queues.yaml",
        lambda cm: cm["metadata"].pop("annotations"),
    )
    lq = f"{DEV}/kueue/%s/localqueue-%s.yaml: LocalQueue/%s: sync-waves: "
    expect(
        validate(repo.root, "dev"),
        (lq % ("sandbox", "sandbox", "sandbox")) + "sync wave 2 is not after ClusterQueue "
        "'platform' (wave 2): ClusterQueue must be applied before LocalQueue",
        (lq % ("platform-dev", "platform", "platform")) + "sync wave 0 is not after ClusterQueue "
        "'platform' (wave 2): ClusterQueue must be applied before LocalQueue",
        (lq % ("platform-dev", "platform", "platform")) + "sync wave 0 is not after its Namespace "
        "'platform-dev' (wave 0)",
        f"{DEV}/monitoring/monitoring/configmap-trainyard-queues.yaml: "
        "ConfigMap/trainyard-queues: sync-waves: annotation argocd.argoproj.io/sync-wave "
        "is missing",
    )


# kueue-rules -----------------------------------------------------------------------------


def test_kueue_cel_rules(repo: Repo, validate: Validate) -> None:
    def break_queue(cq: dict[str, Any]) -> None:
        cq["spec"].pop("cohortName")
        cq["spec"]["preemption"] = {
            "reclaimWithinCohort": "Never",
            "borrowWithinCohort": {"policy": "LowerPriority"},
        }

    repo.edit(f"{DEV}/kueue/clusterqueue-sandbox.yaml", break_queue)
    repo.edit(
        f"{DEV}/kueue/clusterqueue-platform.yaml",
        lambda cq: cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(lendingLimit="9"),
    )
    repo.edit(
        f"{DEV}/kueue/resourceflavor-dev-a100.yaml",
        lambda rf: rf["spec"].update(
            tolerations=[{"operator": "Equal", "effect": "NoSchedule", "tolerationSeconds": 5}]
        ),
    )
    cells = "spec.resourceGroups[0].flavors[0].resources"
    sandbox = f"{DEV}/kueue/clusterqueue-sandbox.yaml: ClusterQueue/sandbox: kueue-rules: "
    flavor = f"{DEV}/kueue/resourceflavor-dev-a100.yaml: ResourceFlavor/dev-a100: kueue-rules: "
    expect(
        validate(repo.root, "dev"),
        *(
            f"{sandbox}{cells}[{i}].borrowingLimit needs spec.cohortName: limits only apply within a cohort"
            for i in range(3)
        ),
        f"{sandbox}preemption.reclaimWithinCohort Never forbids borrowWithinCohort.policy LowerPriority",
        f"{DEV}/kueue/clusterqueue-platform.yaml: ClusterQueue/platform: kueue-rules: {cells}[0]"
        ".lendingLimit 9 is above nominalQuota 8",
        f"{flavor}spec.tolerations[0]: an empty key needs operator Exists",
        f"{flavor}spec.tolerations[0]: tolerationSeconds needs effect NoExecute",
    )


def test_topology_levels(repo: Repo, validate: Validate) -> None:
    def shuffle(topology: dict[str, Any]) -> None:
        labels = ["kubernetes.io/hostname", "example.com/rack", "example.com/rack"]
        topology["spec"]["levels"] = [{"nodeLabel": label} for label in labels]

    repo.edit(f"{STAGING}/kueue/topology-train-h100.yaml", shuffle)
    where = f"{STAGING}/kueue/topology-train-h100.yaml: Topology/train-h100: kueue-rules: spec.levels"
    expect(
        validate(repo.root, "staging"),
        f"{where} repeats example.com/rack; levels must be unique",
        f"{where}: kubernetes.io/hostname can only be the last (lowest) level",
    )


# placement -------------------------------------------------------------------------------


def test_queue_mixing_topology_and_plain_flavors(repo: Repo, validate: Validate) -> None:
    """Staging's queues as they were once rendered: foundation listed train-h100 (topology)
    and infer-l40s (plain), and the real Kueue put training jobs on the L40S flavor."""
    flex = repo.load(f"{STAGING}/kueue/clusterqueue-foundation-flex.yaml")

    def mix(cq: dict[str, Any]) -> None:
        cq["spec"]["resourceGroups"][0]["flavors"] += flex["spec"]["resourceGroups"][0]["flavors"]

    repo.edit(f"{STAGING}/kueue/clusterqueue-foundation.yaml", mix)
    run = validate(repo.root, "staging")
    assert run.code == 1
    assert run.findings("placement") == [
        f"{STAGING}/kueue/clusterqueue-foundation.yaml: ClusterQueue/foundation: placement: flavors "
        "['train-h100'] have a topology and ['infer-l40s'] do not: Kueue applies topology-aware "
        "scheduling only when every flavor of a queue has one, so jobs without topology annotations "
        "are refused on 'train-h100' and land on 'infer-l40s'; split them into two ClusterQueues"
    ]


def test_topology_over_inference_nodes(repo: Repo, validate: Validate) -> None:
    repo.edit(
        f"{STAGING}/kueue/resourceflavor-infer-l40s.yaml",
        lambda rf: rf["spec"].update(topologyName="train-h100"),
    )
    run = validate(repo.root, "staging")
    assert run.code == 1
    assert run.findings("placement") == [
        f"{STAGING}/kueue/resourceflavor-infer-l40s.yaml: ResourceFlavor/infer-l40s: placement: "
        "topology 'train-h100' on a pool of role inference: Kueue counts pods it does not manage "
        "(inference) as used capacity there, so training could never preempt them; drop the "
        "topology or make the pool role training"
    ]


# quantities ------------------------------------------------------------------------------


def test_quantities_past_int64_or_fractional(repo: Repo, validate: Validate) -> None:
    """Issue 13 item 1: `memory: 1800Pi` on 112 nodes rendered `201600Pi` (about 197 EiB, past
    int64) and `1.8Ti` rendered millibytes; both would be refused here even if the spec let
    them through."""

    def inflate(cq: dict[str, Any]) -> None:
        memory = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]
        memory["borrowingLimit"] = "201600Pi"
        cpu = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]
        cpu["borrowingLimit"] = "9223372036854776"  # cores: past int64 only in millicores

    repo.edit(f"{DEV}/kueue/clusterqueue-sandbox.yaml", inflate)
    server = hardened_deployment("server", "sandbox")
    server["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = (
        "221661544159641600m"
    )
    repo.write(f"{DEV}/fixture/sandbox/deployment-server.yaml", server)
    queue = f"{DEV}/kueue/clusterqueue-sandbox.yaml: ClusterQueue/sandbox: quantities: "
    flavor = "spec.resourceGroups[0].flavors[0].resources"
    expect(
        validate(repo.root, "dev"),
        f"{queue}{flavor}[1].borrowingLimit: 9223372036854776 is 9.223e+18 millicores, past "
        "Kubernetes' int64 limit (2^63-1 millicores); the apiserver would cap it",
        f"{queue}{flavor}[2].borrowingLimit: 201600Pi is 2.270e+20 units, past Kubernetes' "
        "int64 limit (2^63-1 units); the apiserver would cap it",
        f"{DEV}/fixture/sandbox/deployment-server.yaml: Deployment/server: quantities: "
        "spec.template.spec.containers[0].resources.limits.memory: 221661544159641600m is not a "
        "whole byte; Kueue and the scheduler round it up",
    )
