"""The root of the model: one environment, frozen, built once by build.py from a validated spec.

Generators read only the model. Every number the spec implies (capacity, quotas, limits,
priority thresholds) is derived in this package, once, and never re-derived elsewhere. The
root imports its sections (types.py's leaf types, monitoring.py, overflow.py, health.py);
none of them imports the root, so the model has no import cycle (tests/test_import_graph.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from generators.model.fromspec import derived, setting
from generators.model.health import Health
from generators.model.monitoring import Monitoring
from generators.model.overflow import Overflow
from generators.model.teams import trains
from generators.model.types import (
    ArgoCD,
    ClusterQueue,
    Cohort,
    FlavorQuota,
    KueueOptions,
    Pool,
    ResourceKind,
    Team,
    Tier,
)


@dataclass(frozen=True)
class Environment:
    name: str
    display_name: str = field(metadata=derived("cluster.displayName"))  # default: name
    source_file: str = field(metadata=derived())  # environments/<name>.yaml
    kubernetes_version: str = field(metadata=setting("cluster.kubernetesVersion"))
    argocd: ArgoCD = field(metadata=setting("cluster.argocd"))
    pools: tuple[Pool, ...]
    cohorts: tuple[Cohort, ...]
    teams: tuple[Team, ...]
    tiers: tuple[Tier, ...] = field(metadata=setting("priorities.tiers"))
    kueue: KueueOptions
    # coveredResources, same order in every ClusterQueue
    resources: tuple[ResourceKind, ...] = field(metadata=derived("pools"))
    # team -> its flavors with quotas (one ClusterQueue's worth, before the split below)
    team_flavors: Mapping[str, tuple[FlavorQuota, ...]] = field(metadata=derived("pools", "teams"))
    # the same flavors, split by placement (team order)
    cluster_queues: tuple[ClusterQueue, ...] = field(metadata=derived("pools", "teams"))
    monitoring: Monitoring  # always present: every field has a schema default
    overflow: Overflow | None = None  # serving overflow; None: nothing of it is rendered
    # node quarantine, mapped by rule; None: backend none (build_health, model/health.py, gives
    # it: its conditions' queries come from the monitoring thresholds)
    health: Health | None = None

    def pool(self, name: str) -> Pool:
        return next(p for p in self.pools if p.name == name)

    @property
    def training_tiers(self) -> tuple[Tier, ...]:
        """Training tiers, highest first."""
        return tuple(sorted((t for t in self.tiers if t.role == "training"), key=lambda t: -t.value))

    @property
    def default_training_tier(self) -> Tier:
        """What a pod in a training namespace runs at when it names no class: the lowest
        training tier (still above every inference tier), so an ordinary job preempts serving
        and is preempted by a critical one."""
        return self.training_tiers[-1]

    @property
    def training_namespaces(self) -> tuple[str, ...]:
        """Namespaces of the teams whose queues reach a training or shared pool: their pods
        are training and must outrank inference (sorted)."""
        roles = {p.name: p.role for p in self.pools}
        return tuple(
            sorted(
                ns
                for t in self.teams
                if trains(roles.get(pool) for pool in (*t.shares, *t.borrow_from))
                for ns in t.namespaces
            )
        )

    @property
    def gpus(self) -> int:
        return sum(p.gpus for p in self.pools)

    @property
    def schedulable_gpus(self) -> int:
        return sum(p.schedulable_gpus for p in self.pools)
