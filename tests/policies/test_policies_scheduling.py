"""Policies about scheduling and apply order (quota-conservation, references, priorities,
kueue-rules, sync-waves): a small break of a copied rendered tree makes `validate` exit 1
with the expected line, and nothing else but the staleness findings the edit causes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from .conftest import DEV, STAGING, Repo, Validate, expect, hardened_deployment

Change = Callable[[dict[str, Any]], None]

# A ClusterQueue's resource cells (its first flavor's; dev's: gpu, cpu, memory): where the
# tests break a quota, and how a finding names it.
CELLS = "spec.resourceGroups[0].flavors[0].resources"


def cells(cq: dict[str, Any]) -> list[dict[str, Any]]:
    """The cells CELLS names, in a loaded ClusterQueue."""
    resources: list[dict[str, Any]] = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    return resources


# quota-conservation ----------------------------------------------------------------------


def _platform_gpus_above_capacity(cq: dict[str, Any]) -> None:
    cells(cq)[0]["nominalQuota"] = "10"


def _cohort_lends_cpu(cohort: dict[str, Any]) -> None:
    cohort["spec"] = {
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "dev-a100", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
            }
        ]
    }


@pytest.mark.parametrize(
    ("rel", "change", "finding"),
    [
        pytest.param(
            f"{DEV}/kueue/clusterqueue-platform.yaml",
            _platform_gpus_above_capacity,
            "nvidia.com/gpu: nominal quotas sum to 18, above the 16 that 4 schedulable nodes of pool "
            "dev-a100 back (ClusterQueue platform 10, ClusterQueue sandbox 8)",
            id="quota-above-pool-capacity",
        ),
        pytest.param(
            f"{DEV}/kueue/cohort-dev.yaml",
            _cohort_lends_cpu,
            "cpu: nominal quotas sum to 385, above the 384 that 4 schedulable nodes of pool dev-a100 "
            "back (ClusterQueue platform 192, ClusterQueue sandbox 192, Cohort dev 1)",
            id="cohort-quota-counts",
        ),
    ],
)
def test_quota_conservation(repo: Repo, validate: Validate, rel: str, change: Change, finding: str) -> None:
    """A queue's quota and a cohort's both count against the pool: the sum is found on the
    pool's flavor (dev-a100's 4 schedulable nodes)."""
    repo.edit(rel, change)
    expect(
        validate(repo.root, "dev"),
        f"{DEV}/kueue/resourceflavor-dev-a100.yaml: ResourceFlavor/dev-a100: quota-conservation: {finding}",
    )


# references ------------------------------------------------------------------------------


def _swap_memory_and_cpu(cq: dict[str, Any]) -> None:
    resources = cells(cq)
    resources[1], resources[2] = resources[2], resources[1]


@pytest.mark.parametrize(
    ("rel", "change", "finding"),
    [
        pytest.param(
            f"{DEV}/kueue/sandbox/localqueue-sandbox.yaml",
            lambda lq: lq["spec"].update(clusterQueue="sandbx"),
            "LocalQueue/sandbox: references: spec.clusterQueue names ClusterQueue 'sandbx', which "
            "this environment does not render (known: platform, sandbox)",
            id="local-queue-names-missing-cluster-queue",
        ),
        pytest.param(
            f"{DEV}/kueue/clusterqueue-platform.yaml",
            _swap_memory_and_cpu,
            f"ClusterQueue/platform: references: {CELLS} lists "
            "['nvidia.com/gpu', 'memory', 'cpu'] but coveredResources is ['nvidia.com/gpu', 'cpu', "
            "'memory']: Kueue requires the same resources in the same order",
            id="covered-resources-order",
        ),
    ],
)
def test_references_of_one_object(
    repo: Repo, validate: Validate, rel: str, change: Change, finding: str
) -> None:
    """A broken reference is found on the object that holds it, the file the test edited."""
    repo.edit(rel, change)
    expect(validate(repo.root, "dev"), f"{rel}: {finding}")


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
        lambda cq: cells(cq)[0].update(lendingLimit="9"),
    )
    repo.edit(
        f"{DEV}/kueue/resourceflavor-dev-a100.yaml",
        lambda rf: rf["spec"].update(
            tolerations=[{"operator": "Equal", "effect": "NoSchedule", "tolerationSeconds": 5}]
        ),
    )
    sandbox = f"{DEV}/kueue/clusterqueue-sandbox.yaml: ClusterQueue/sandbox: kueue-rules: "
    flavor = f"{DEV}/kueue/resourceflavor-dev-a100.yaml: ResourceFlavor/dev-a100: kueue-rules: "
    expect(
        validate(repo.root, "dev"),
        *(
            f"{sandbox}{CELLS}[{i}].borrowingLimit needs spec.cohortName: limits only apply within a cohort"
            for i in range(3)
        ),
        f"{sandbox}preemption.reclaimWithinCohort Never forbids borrowWithinCohort.policy LowerPriority",
        f"{DEV}/kueue/clusterqueue-platform.yaml: ClusterQueue/platform: kueue-rules: {CELLS}[0]"
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


def _mix_in_the_flex_flavors(cq: dict[str, Any], repo: Repo) -> None:
    """Staging's queues as they were once rendered: foundation listed train-h100 (topology)
    and infer-l40s (plain), and the real Kueue put training jobs on the L40S flavor."""
    flex = repo.load(f"{STAGING}/kueue/clusterqueue-foundation-flex.yaml")
    cq["spec"]["resourceGroups"][0]["flavors"] += flex["spec"]["resourceGroups"][0]["flavors"]


def _topology_over_inference(rf: dict[str, Any], repo: Repo) -> None:
    rf["spec"].update(topologyName="train-h100")


@pytest.mark.parametrize(
    ("rel", "change", "finding"),
    [
        pytest.param(
            f"{STAGING}/kueue/clusterqueue-foundation.yaml",
            _mix_in_the_flex_flavors,
            "ClusterQueue/foundation: placement: flavors ['train-h100'] have a topology and "
            "['infer-l40s'] do not: Kueue applies topology-aware scheduling only when every flavor "
            "of a queue has one, so jobs without topology annotations are refused on 'train-h100' "
            "and land on 'infer-l40s'; split them into two ClusterQueues",
            id="queue-mixing-topology-and-plain-flavors",
        ),
        pytest.param(
            f"{STAGING}/kueue/resourceflavor-infer-l40s.yaml",
            _topology_over_inference,
            "ResourceFlavor/infer-l40s: placement: topology 'train-h100' on a pool of role inference: "
            "Kueue counts pods it does not manage (inference) as used capacity there, so training "
            "could never preempt them; drop the topology or make the pool role training",
            id="topology-over-inference-nodes",
        ),
    ],
)
def test_placement(
    repo: Repo, validate: Validate, rel: str, change: Callable[[dict[str, Any], Repo], None], finding: str
) -> None:
    """A staging queue or flavor broken so training and inference meet under one topology: the
    one placement finding is on the object the test edited."""
    repo.edit(rel, lambda obj: change(obj, repo))
    run = validate(repo.root, "staging")
    assert run.code == 1
    assert run.findings("placement") == [f"{rel}: {finding}"]


# quantities ------------------------------------------------------------------------------


def test_quantities_past_int64_or_fractional(repo: Repo, validate: Validate) -> None:
    """`memory: 1800Pi` on 112 nodes once rendered `201600Pi` (about 197 EiB, past
    int64) and `1.8Ti` rendered millibytes; both would be refused here even if the spec let
    them through."""

    def inflate(cq: dict[str, Any]) -> None:
        cells(cq)[2]["borrowingLimit"] = "201600Pi"  # memory
        cells(cq)[1]["borrowingLimit"] = "9223372036854776"  # cpu cores: past int64 only in millicores

    repo.edit(f"{DEV}/kueue/clusterqueue-sandbox.yaml", inflate)
    server = hardened_deployment("server", "sandbox")
    server["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = (
        "221661544159641600m"
    )
    repo.write(f"{DEV}/fixture/sandbox/deployment-server.yaml", server)
    queue = f"{DEV}/kueue/clusterqueue-sandbox.yaml: ClusterQueue/sandbox: quantities: "
    expect(
        validate(repo.root, "dev"),
        f"{queue}{CELLS}[1].borrowingLimit: 9223372036854776 is 9.223e+18 millicores, past "
        "Kubernetes' int64 limit (2^63-1 millicores); the apiserver would cap it",
        f"{queue}{CELLS}[2].borrowingLimit: 201600Pi is 2.270e+20 units, past Kubernetes' "
        "int64 limit (2^63-1 units); the apiserver would cap it",
        f"{DEV}/fixture/sandbox/deployment-server.yaml: Deployment/server: quantities: "
        "spec.template.spec.containers[0].resources.limits.memory: 221661544159641600m is not a "
        "whole byte; Kueue and the scheduler round it up",
    )
