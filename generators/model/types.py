"""The model's leaf types: pools, teams, tiers, queues, Kueue and Argo CD options, and the
image and resources every rendered controller has.

They import no other section of the model: the root, Environment (environment.py), holds
them and the sections built from them (monitoring.py, overflow.py, health.py), so a section
may use a Pool or a Tier without importing the root that holds it. Fields map onto schema
properties by the rule in fromspec.py; a field's metadata says where it differs (another key,
a converter, derived by build.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from generators.model.fromspec import derived, setting
from generators.model.quantity import Format, canonical

Role = Literal["training", "inference", "shared"]


@dataclass(frozen=True)
class ResourceKind:
    """A resource that ClusterQueues cover, in coveredResources order."""

    name: str
    format: Format  # how quantities of it are printed

    def show(self, amount: Fraction) -> str:
        return canonical(amount, self.format)


@dataclass(frozen=True)
class Taint:
    key: str
    value: str | None
    effect: str


@dataclass(frozen=True)
class Pool:
    name: str
    role: Role
    gpu_model: str = field(metadata=setting("gpu.model"))
    gpu_resource: str = field(metadata=setting("gpu.resource"))
    gpus_per_node: int = field(metadata=setting("gpu.perNode"))
    nodes: int
    reserve_nodes: int
    # resource name -> base units (cores, bytes, devices), quantities parsed
    per_node: Mapping[str, Fraction] = field(
        metadata=derived("gpu.resource", "gpu.perNode", "cpu", "memory", "extraResources")
    )
    node_labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    topology_levels: tuple[str, ...] = field(metadata=setting("topology.levels", absent=()))

    @property
    def schedulable_nodes(self) -> int:
        """Nodes that back quota: the reserve absorbs failed nodes without breaking gangs."""
        return self.nodes - self.reserve_nodes

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def schedulable_gpus(self) -> int:
        return self.schedulable_nodes * self.gpus_per_node

    def capacity(self, resource: str) -> Fraction:
        """Quota-backing capacity of `resource` (0 if the pool lacks it)."""
        return self.per_node.get(resource, Fraction(0)) * self.schedulable_nodes


@dataclass(frozen=True)
class Cohort:
    name: str
    parent: str | None
    fair_sharing_weight: float | None


@dataclass(frozen=True)
class Team:
    name: str
    namespaces: tuple[str, ...]
    cohort: str | None
    shares: Mapping[str, int]  # pool -> percent
    borrow_from: tuple[str, ...]  # pools without a share the team may borrow through its cohort
    max_usage_percent: int | None
    lendable_percent: int | None
    fair_sharing_weight: float | None


@dataclass(frozen=True)
class Tier:
    name: str
    role: Literal["training", "inference"]
    value: int  # PriorityClass and WorkloadPriorityClass alike: one scale
    preemption_policy: str
    description: str


@dataclass(frozen=True)
class Quota:
    """One (flavor, resource) cell of a ClusterQueue."""

    resource: ResourceKind
    nominal: Fraction
    borrowing_limit: Fraction | None
    lending_limit: Fraction | None


@dataclass(frozen=True)
class FlavorQuota:
    pool: str
    nodes: int  # schedulable nodes of the pool this team owns
    quotas: tuple[Quota, ...]  # in coveredResources order


@dataclass(frozen=True)
class ClusterQueue:
    """One ClusterQueue of a team. Kueue applies topology-aware scheduling implicitly only
    when EVERY flavor of a queue has a topology (`isTASOnly`, pkg/cache/scheduler/clusterqueue.go
    in kubernetes-sigs/kueue v0.19.2); a queue mixing both refuses unannotated jobs on the
    topology flavors and lets them fall through to the plain ones. So a team's pools are split
    by placement: topology pools in `<team>`, plain pools in `<team>-flex` (or in `<team>` when
    the team reaches no topology pool)."""

    name: str
    team: str
    topology: bool  # every flavor has a Topology: placement is topology-aware
    flavors: tuple[FlavorQuota, ...]


@dataclass(frozen=True)
class Preemption:
    reclaim_within_cohort: str
    within_cluster_queue: str
    borrow_within_cohort: str
    # highest inference workload priority: what borrowing may preempt
    borrow_max_priority: int = field(metadata=derived())


@dataclass(frozen=True)
class WaitForPodsReady:
    """Always rendered: Kueue v0.19 runs waitForPodsReady whatever the Configuration says
    (spec `enabled: false` is refused by the schema)."""

    timeout: str
    recovery_timeout: str
    block_admission: bool
    backoff_limit_count: int
    backoff_base_seconds: int
    backoff_max_seconds: int


@dataclass(frozen=True)
class KueueOptions:
    namespace: str
    queueing_strategy: str
    configuration_delivery: str  # helmValues | configMap (schemas: kueue.configurationDelivery)
    integrations: tuple[str, ...]
    manage_jobs_without_queue_name: bool
    wait_for_pods_ready: WaitForPodsReady
    fair_sharing: bool = field(metadata=setting("fairSharing.enabled"))
    fair_sharing_strategies: tuple[str, ...] = field(metadata=setting("fairSharing.preemptionStrategies"))
    preemption: Preemption


def _automated(sync_policy: str) -> bool:
    return sync_policy == "automated"


@dataclass(frozen=True)
class ArgoCD:
    namespace: str
    project: str
    repo_url: str = field(metadata=setting("repoURL"))
    target_revision: str
    destination_server: str
    automated: bool = field(metadata=setting("syncPolicy", convert=_automated))


@dataclass(frozen=True)
class Image:
    """A controller's image (the overflow gate, the descheduler, the health controller)."""

    repository: str
    tag: str
    digest: str | None

    @property
    def reference(self) -> str:
        pinned = f"{self.repository}:{self.tag}"
        return f"{pinned}@{self.digest}" if self.digest else pinned


@dataclass(frozen=True)
class Resources:
    cpu_request: str
    memory_request: str
    cpu_limit: str
    memory_limit: str
