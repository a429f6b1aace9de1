"""Rules the schema cannot express: cross references, sums, orderings, file naming.

Each check returns Problems located at the offending value; all of them run, so a person
fixing a file sees every mistake at once.

The checks read the model's leaf objects (pools, teams, cohorts, tiers), mapped from the
schema-valid value by fromspec's rule before the rest of the model is built (build() assumes
what these checks establish), and locate a problem by the same rule (fromspec.spec_path): a
setting is named here by its field (`pool.reserve_nodes`), and the file position comes from
the key the field maps (`pools[2].reserveNodes`). What no model field holds is read from
the value: a pool's extraResources (summed into Pool.per_node) and the monitoring exporters'
versions (whose parse is what is checked).
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from generators.errors import Problem, format_path
from generators.model import exporters
from generators.model.build import build_pools
from generators.model.checks import argocd, example, health, monitoring, overflow, quantities
from generators.model.checks.where import item, section
from generators.model.environment import Environment
from generators.model.fromspec import spec_path, take
from generators.model.overflow import InferenceService, Overflow
from generators.model.quota import preferred_level
from generators.model.teams import TRAINING_ROLES, flex_queue, trains
from generators.model.types import Cohort, KueueOptions, Pool, Preemption, Team, Tier
from generators.spec.checker import Checker, Path_
from generators.spec.source import Document
from generators.upstream import job_kinds, kubernetes

ARCH_LABEL = "kubernetes.io/arch"  # the kubelet sets it on every node


def _grace(model: str) -> bool:
    """NVIDIA's Grace superchips (GB200, GB300, GH200) pair the GPUs with an arm64 CPU."""
    return model.upper().startswith(("GB", "GH"))


class _Checker(Checker):
    def __init__(self, doc: Document, value: dict[str, Any], env_name: str) -> None:
        super().__init__(doc, value)
        self.env_name = env_name
        self.arch_reported: set[str] = set()
        self.pools: tuple[Pool, ...] = build_pools(value)
        self.teams: tuple[Team, ...] = take(Environment, "teams", value)
        self.cohorts: tuple[Cohort, ...] = take(Environment, "cohorts", value)
        self.tiers: tuple[Tier, ...] = take(Environment, "tiers", value)

    def unknown(self, path: Path_, what: str, name: str, known: Iterable[str], *, key: bool = False) -> None:
        choices = sorted(known)
        close = difflib.get_close_matches(name, choices, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known {what}s: {', '.join(choices) or 'none'}"
        self.add(path, f"unknown {what} {name!r}", hint, key=key)

    def unknown_share(self, team: int, pool: str, pools: Iterable[str]) -> None:
        """A share of a pool that is not there: most often the pool was removed, and moving
        the share to a similarly named pool (what "did you mean" suggests) would be wrong."""
        close = difflib.get_close_matches(pool, sorted(pools), n=1)
        typo = f"; if it is a typo, did you mean {close[0]!r}?" if close else ""
        self.add(
            (*item("teams", team, Team, "shares"), pool),
            f"share of unknown pool {pool!r}",
            f"if the pool was removed, delete this share{typo}",
            key=True,
        )

    def unique(self, held: str, items: Sequence[Pool | Team | Cohort], what: str) -> None:
        seen: dict[str, int] = {}
        for i, one in enumerate(items):
            if one.name in seen:
                self.add(
                    item(held, i, type(one), "name"),
                    f"duplicate {what} name {one.name!r}",
                    f"first used at {format_path(item(held, seen[one.name]))}",
                )
            seen.setdefault(one.name, i)

    def run(self) -> list[Problem]:
        v = self.v
        name: str = take(Environment, "name", v)
        if name != self.env_name:
            self.add(
                spec_path(Environment, "name"),
                f"environment name {name!r} does not match its file {self.env_name}.yaml",
                f"rename the file or set name: {self.env_name}",
            )
        self.kubernetes_version()
        self.unique("pools", self.pools, "pool")
        self.unique("teams", self.teams, "team")
        self.unique("cohorts", self.cohorts, "cohort")
        self.unique_tiers()
        self.check_pools()
        self.problems += quantities.check(self.doc, v)
        self.check_cohorts()
        self.check_teams()
        self.queue_names()
        self.priorities()
        self.preemption()
        self.serving_namespaces()
        self.exporter_versions()
        self.problems += overflow.check(self.doc, v)
        self.problems += health.check(self.doc, v)
        self.problems += monitoring.check(self.doc, v)
        self.problems += example.check(self.doc, v)
        self.problems += argocd.check(self.doc, v)
        return self.problems

    def kubernetes_version(self) -> None:
        version: str = take(Environment, "kubernetes_version", self.v)
        if not kubernetes.supported(version):
            self.add(
                spec_path(Environment, "kubernetes_version"),
                f"Kubernetes {version} is outside the supported "
                f"range {kubernetes.name(kubernetes.OLDEST)} to {kubernetes.name(kubernetes.NEWEST)}",
                "the rendered objects are checked against that range's API schemas "
                "(generators/upstream/kubernetes.py says why each end is there)",
            )

    def exporter_versions(self) -> None:
        """Label names follow from the exporter versions: a version is accepted by the label
        contract its range shares, or by the one the environment states (generators/model/exporters.py)."""
        named = self.v["monitoring"]["exporters"]
        stated = named.get("labelContract", {})
        for key, parse in exporters.PARSERS.items():
            try:
                parse(named[key], stated.get(key))
            except exporters.UnknownVersion as error:
                at = ("labelContract", key) if key in stated else (key,)
                self.add(("monitoring", "exporters", *at), str(error), error.hint)

    def serving_namespaces(self) -> None:
        """An overflow inference service cannot live in a training namespace: the admission
        policy there gives every pod a training tier, so serving would preempt training."""
        roles = {p.name: p.role for p in self.pools}
        training = {
            ns: t.name
            for t in self.teams
            if trains(roles.get(pool) for pool in (*t.shares, *t.borrow_from))
            for ns in t.namespaces
        }
        overflow = spec_path(Environment, "overflow")[0]
        services: tuple[InferenceService, ...] = (
            take(Overflow, "inference", self.v[overflow]) if overflow in self.v else ()
        )
        for i, service in enumerate(services):
            team = training.get(service.namespace)
            if team is not None:
                self.add(
                    (
                        *section((Environment, "overflow"), (Overflow, "inference")),
                        i,
                        *spec_path(InferenceService, "namespace"),
                    ),
                    f"namespace {service.namespace!r} "
                    f"is a training namespace of team {team!r}: its pods run at a training tier",
                    "serve from a namespace of a team that holds only inference pools, or from "
                    "overflow.extraNamespaces",
                )

    def preemption(self) -> None:
        where = section((Environment, "kueue"), (KueueOptions, "preemption"))
        raw = self.v
        for key in where:
            raw = raw[key]
        reclaim: str = take(Preemption, "reclaim_within_cohort", raw)
        borrow: str = take(Preemption, "borrow_within_cohort", raw)
        if reclaim == "Never" and borrow != "Never":
            self.add(
                (*where, *spec_path(Preemption, "borrow_within_cohort")),
                "borrowWithinCohort needs reclaimWithinCohort other than Never",
                "a Kueue validation rule; set both to Never or allow reclaiming",
            )

    def unique_tiers(self) -> None:
        seen: set[str] = set()
        for i, tier in enumerate(self.tiers):
            if tier.name.startswith("system-"):
                self.add(
                    item("tiers", i, Tier, "name"),
                    "names starting with 'system-' are reserved for Kubernetes",
                    "pick another tier name",
                )
            if tier.name in seen:
                self.add(item("tiers", i, Tier, "name"), f"duplicate tier name {tier.name!r}")
            seen.add(tier.name)

    def check_pools(self) -> None:
        for i, pool in enumerate(self.pools):
            if pool.reserve_nodes >= pool.nodes:
                self.add(
                    item("pools", i, Pool, "reserve_nodes"),
                    f"reserve of {pool.reserve_nodes} nodes leaves no capacity in a pool of {pool.nodes}",
                    "reserveNodes must be below nodes",
                )
            # Summed into Pool.per_node, where a clash is no longer visible: read as written.
            for resource in self.v["pools"][i]["extraResources"]:
                if resource in ("cpu", "memory", pool.gpu_resource):
                    self.add(
                        (*item("pools", i), "extraResources", resource),
                        f"{resource!r} is already covered by gpu/cpu/memory",
                        key=True,
                    )
            levels = pool.topology_levels
            topology = item("pools", i, Pool, "topology_levels")  # pools[i].topology.levels
            if levels and pool.role != "training":
                self.add(
                    topology[:-1],
                    f"pool {pool.name!r} (role {pool.role}) has a "
                    "topology, but inference pods run on it outside Kueue",
                    "Kueue's topology-aware scheduling counts pods it does not manage as used capacity "
                    "(non_tas_usage_controller.go), so training could never preempt inference there; "
                    "remove topology or make the pool role: training",
                    key=True,
                )
            if "kubernetes.io/hostname" in levels[:-1]:
                self.add(
                    topology,
                    "kubernetes.io/hostname may only be the last (finest) topology level",
                    "Kueue Topology rule",
                )

    def check_cohorts(self) -> None:
        names = {c.name for c in self.cohorts}
        parents = {c.name: c.parent for c in self.cohorts}
        for i, cohort in enumerate(self.cohorts):
            parent = cohort.parent
            if parent is not None and parent not in names:
                self.unknown(item("cohorts", i, Cohort, "parent"), "cohort", parent, names)
            seen = {cohort.name}
            while parent is not None and parent in parents:
                if parent in seen:
                    # A cohort that only leads into a loop of others is not its own ancestor:
                    # the loop is reported on the cohorts that are on it.
                    if parent == cohort.name:
                        self.add(
                            item("cohorts", i, Cohort, "parent"),
                            f"cohort {cohort.name!r} is its own ancestor",
                        )
                    break
                seen.add(parent)
                parent = parents[parent]

    def check_teams(self) -> None:
        pools = {p.name: p for p in self.pools}
        cohorts = {c.name for c in self.cohorts}
        totals: Counter[str] = Counter()
        namespaces: dict[str, str] = {}
        for i, team in enumerate(self.teams):
            if team.cohort is not None and team.cohort not in cohorts:
                self.unknown(item("teams", i, Team, "cohort"), "cohort", team.cohort, cohorts)
            if team.cohort is None:
                for field in ("max_usage_percent", "lendable_percent"):
                    if getattr(team, field) is not None:
                        key = item("teams", i, Team, field)
                        self.add(
                            key,
                            f"{key[-1]} needs a cohort to borrow from or lend to",
                            "set teams[].cohort or remove the field",
                            key=True,
                        )
            for pool, share in team.shares.items():
                if pool not in pools:
                    self.unknown_share(i, pool, pools)
                if isinstance(share, float):  # JSON Schema's integer admits 1.0
                    self.add(
                        (*item("teams", i, Team, "shares"), pool),
                        f"share {share} is not a whole percent",
                        f"shares are percents of the pool: write {int(share)}"
                        + (" (or 100 for the whole pool: 1.0 is not 100%)" if share == 1.0 else ""),
                    )
                totals[pool] += int(share)
            self.usage_cap(i, team)
            self.borrow_from(i, team, pools)
            self.one_architecture_or_selectable(team, pools)
            self.default_topology(i, team, pools)
            for j, ns in enumerate(team.namespaces):
                if ns in namespaces:
                    self.add(
                        (*item("teams", i, Team, "namespaces"), j),
                        f"namespace {ns!r} already belongs to team {namespaces[ns]!r}",
                        "a namespace feeds exactly one ClusterQueue",
                    )
                namespaces.setdefault(ns, team.name)
        for i, held in enumerate(self.pools):
            total = totals.get(held.name, 0)
            if total != 100:
                owners = (
                    ", ".join(f"{t.name}={t.shares[held.name]}" for t in self.teams if held.name in t.shares)
                    or "no team"
                )
                verdict = "over" if total > 100 else "under"
                self.add(
                    item("pools", i, Pool, "name"),
                    f"team shares of pool {held.name!r} sum to {total}%, {verdict} 100%",
                    f"shares: {owners}; they must add up to exactly 100 so quota equals capacity",
                )

    def one_architecture_or_selectable(self, team: Team, pools: dict[str, Pool]) -> None:
        """Two GPU generations in one ClusterQueue must each pin their CPU architecture.

        Kueue tries a queue's flavors in order and gives a job the first that fits, unless
        the job's nodeSelector or affinity rules a flavor out by its nodeLabels. GB200 hosts
        are arm64 and H100 hosts amd64: without `kubernetes.io/arch` on each flavor a job
        built for one can be admitted onto the other (docs/scheduling.md,
        "Two GPU generations")."""
        # Training generations: an inference pool borrowed into a queue is the same kind of
        # host as the serving fleet, and shipped clusters mix those without trouble.
        names = [
            p for p in (*team.shares, *team.borrow_from) if p in pools and pools[p].role in TRAINING_ROLES
        ]
        for topology in (True, False):  # the team's two queues (generators/model/teams.py)
            group = [pools[p] for p in names if bool(pools[p].topology_levels) == topology]
            # The risk is a Grace host (GB200, GB300, GH200: arm64) beside an x86 one; two x86
            # generations (A100 beside H100) run the same images.
            arm = [p for p in group if _grace(p.gpu_model) or p.node_labels.get(ARCH_LABEL) == "arm64"]
            if len({p.gpu_model for p in group}) < 2 or not arm or len(arm) == len(group):
                continue
            for pool in group:
                if ARCH_LABEL not in pool.node_labels and pool.name not in self.arch_reported:
                    self.arch_reported.add(pool.name)  # once per pool, not once per team
                    others = ", ".join(f"{p.name} ({p.gpu_model})" for p in group if p is not pool)
                    index = next(k for k, p in enumerate(self.pools) if p.name == pool.name)
                    self.add(
                        item("pools", index, Pool, "node_labels"),
                        f"pool {pool.name!r} "
                        f"({pool.gpu_model}) shares team {team.name!r}'s queue with "
                        f"{others} but its nodeLabels lack {ARCH_LABEL}",
                        f"Kueue gives a job the first flavor that fits; add {ARCH_LABEL}: "
                        "<amd64|arm64> to each pool so a job picks its generation by nodeSelector",
                    )

    def default_topology(self, i: int, team: Team, pools: dict[str, Pool]) -> None:
        """A team whose topology queue holds pools of different topologies gets no default
        level (preferred_level): its gangs that name none are placed host by host, silently
        unless said here. Kueue takes one preferred level per pod set, and a level one
        flavor's Topology lacks is not one Kueue can place on that flavor."""
        kinds = job_kinds.enabled(take(KueueOptions, "integrations", self.v.get("kueue", {})))
        group = [
            pools[p] for p in (*team.shares, *team.borrow_from) if p in pools and pools[p].topology_levels
        ]
        if not kinds or len({p.topology_levels for p in group}) < 2 or preferred_level(group) is not None:
            return
        tops = ", ".join(f"{p.name}: {p.topology_levels[0]}" for p in sorted(group, key=lambda p: p.name))
        self.warn(
            item("teams", i, Team, "shares"),
            f"team {team.name!r}'s topology queue holds pools of different topologies ({tops}): "
            "a gang that names no topology gets no default level and is placed host by host",
            "give the pools one shared top level (the same rack or block label first in "
            "topology.levels), or have the team's jobs set kueue.x-k8s.io/podset-preferred-topology",
        )

    def usage_cap(self, i: int, team: Team) -> None:
        """maxUsagePercent caps own + borrowed capacity: below the team's own share it cannot
        hold and would silently become a borrowing limit of 0."""
        for field in ("max_usage_percent", "lendable_percent"):
            value = getattr(team, field)
            if isinstance(value, float):
                key = item("teams", i, Team, field)
                self.add(key, f"{key[-1]} {value} is not a whole percent", f"write {int(value)}")
        cap = team.max_usage_percent
        # A pool the team owns whole has nothing to borrow: the cap is moot there.
        partial = {p: share for p, share in team.shares.items() if share < 100}
        if cap is None or not partial:
            return
        pool, share = max(partial.items(), key=lambda item: (item[1], item[0]))
        if cap < share:
            self.add(
                item("teams", i, Team, "max_usage_percent"),
                f"maxUsagePercent {cap} is below the team's own share of pool {pool!r} ({share}%)",
                "it caps own plus borrowed capacity; set it to "
                f"at least {share} (borrowing then starts above the share) or remove it",
            )

    def borrow_from(self, i: int, team: Team, pools: dict[str, Pool]) -> None:
        """A borrowed pool exists, is not also a share, and some team in the same cohort tree
        owns quota of it (Kueue lends only within a cohort tree)."""
        root = self.cohort_root(team.cohort)
        for j, pool in enumerate(team.borrow_from):
            path: Path_ = (*item("teams", i, Team, "borrow_from"), j)
            if pool not in pools:
                self.unknown(path, "pool", pool, pools)
            elif pool in team.shares:
                self.add(
                    path,
                    f"team {team.name!r} already holds a share of pool {pool!r}",
                    "a share already lets the team use and borrow the pool; remove it here",
                )
            elif root is None:
                self.add(
                    path,
                    f"borrowing pool {pool!r} needs a cohort",
                    "set teams[].cohort: Kueue lends only between ClusterQueues of one cohort tree",
                )
            elif not any(
                other.shares.get(pool, 0) > 0 and self.cohort_root(other.cohort) == root
                for other in self.teams
                if other is not team
            ):
                self.add(
                    path,
                    f"no team in cohort tree {root!r} holds a share of pool {pool!r}, so there "
                    "is nothing to borrow",
                    "give a team of the same cohort tree a share of it, or join the cohorts under one parent",
                )

    def cohort_root(self, cohort: str | None) -> str | None:
        parents = {c.name: c.parent for c in self.cohorts}
        seen: set[str] = set()
        while cohort is not None and parents.get(cohort) is not None and cohort not in seen:
            seen.add(cohort)
            cohort = parents[cohort]
        return cohort

    def queue_names(self) -> None:
        """`<team>-flex` (a team's queue of plain pools) must not collide with a team's queue."""
        names = {t.name for t in self.teams}
        topology = {p.name: bool(p.topology_levels) for p in self.pools}
        for i, team in enumerate(self.teams):
            placements = {topology.get(pool) for pool in (*team.shares, *team.borrow_from)}
            if placements != {True, False}:
                continue  # one queue, named after the team
            flex = flex_queue(team.name)
            if flex in names:
                self.add(
                    item("teams", i, Team, "name"),
                    f"team {team.name!r} would render ClusterQueue {flex!r}, the name of another team",
                    "rename one of the two teams",
                )
            elif len(flex) > 63:
                self.add(
                    item("teams", i, Team, "name"),
                    f"ClusterQueue name {flex!r} is longer than 63 characters "
                    "(it is a label value: kueue.x-k8s.io/queue-name)",
                    "shorten the team name",
                )

    def priorities(self) -> None:
        by_role: dict[str, list[tuple[int, Tier]]] = {"training": [], "inference": []}
        for i, tier in enumerate(self.tiers):
            by_role[tier.role].append((i, tier))
        for role in ("training", "inference"):
            if not by_role[role]:
                self.add(
                    spec_path(Environment, "tiers"),
                    f"no {role} tier",
                    "the talk's scheme needs at least one training and one inference tier",
                )
        if by_role["training"] and by_role["inference"]:
            low_i, low = min(by_role["training"], key=lambda t: t[1].value)
            _, high = max(by_role["inference"], key=lambda t: t[1].value)
            if low.value <= high.value:
                self.add(
                    item("tiers", low_i, Tier, "value"),
                    f"training tier {low.name!r} ({low.value}) is not above "
                    f"inference tier {high.name!r} ({high.value})",
                    "every training tier must outrank every inference tier so training preempts serving",
                )
        values = Counter(t.value for t in self.tiers)
        for i, tier in enumerate(self.tiers):
            if values[tier.value] > 1:
                self.add(
                    item("tiers", i, Tier, "value"),
                    f"value {tier.value} is used by more than one tier",
                    "values must be unique so the order is unambiguous",
                )


def check(doc: Document, value: dict[str, Any], env_name: str) -> list[Problem]:
    """Semantic problems of a schema-valid, defaulted environment."""
    return _Checker(doc, value, env_name).run()
