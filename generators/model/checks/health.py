"""Semantic rules of the `health` section that its schema cannot express.

Called from semantics.check; each Problem sits at the offending value of the file. The
checks read the model's pools and the section's settings by fromspec's rule (the names a
check reads are the model's) and locate problems by it (checks/where.py); the list of
watched pool names is read as written (Controller.pools is derived from it).
"""

from __future__ import annotations

import difflib
from typing import Any

from generators.errors import Problem, format_path
from generators.model.build import build_pools
from generators.model.checks.where import Path_, item, section
from generators.model.environment import Environment
from generators.model.fromspec import spec_path, take
from generators.model.health import (
    DEFAULT_POOL_ROLES,
    POOL_LABEL,
    TAINT_KEY,
    Cap,
    Controller,
    Health,
    NvSentinel,
)
from generators.model.types import Pool
from generators.spec.checker import Checker
from generators.spec.source import Document

NVIDIA_PREFIX = "nvidia.com/"  # nvidia.com/gpu and the MIG resources nvidia.com/mig-*

HEALTH = section((Environment, "health"))
CAP = (*HEALTH, *spec_path(Controller, "cap"))  # the controller's settings sit beside backend
WATCHED = (*HEALTH, "pools")  # read by the derived Controller.pools


class _HealthChecker(Checker):
    def __init__(self, doc: Document, value: dict[str, Any]) -> None:
        super().__init__(doc, value)
        self.h: dict[str, Any] = value["health"]
        self.backend: str = take(Health, "backend", self.h)
        self.pools = build_pools(value)

    def run(self) -> list[Problem]:
        self.pool_taints()
        if self.backend == "trainyard":
            watched = self.watched()
            self.caps(watched)
        return self.problems

    def pool_taints(self) -> None:
        """A pool that declares a quarantine taint gives its flavor the toleration: training
        admitted to the pool would then run on quarantined nodes, and sync-inventory would
        count them as quota."""
        keys = {TAINT_KEY} if self.backend == "trainyard" else set()
        if self.backend == "nvsentinel":
            nvsentinel: NvSentinel = take(Health, "nvsentinel", self.h)
            keys = {t.key for t in nvsentinel.taints}
        for i, pool in enumerate(self.pools):
            for j, taint in enumerate(pool.taints):
                if taint.key in keys:
                    self.add(
                        (*item("pools", i, Pool, "taints"), j, "key"),
                        f"pool {pool.name!r} declares the quarantine taint {taint.key!r}",
                        "training admitted to the pool would "
                        "tolerate quarantine; remove the taint from the pool",
                    )

    def watched(self) -> list[tuple[int, Pool]]:
        """(index in pools, pool) of every pool the controller watches; problems for names
        that are not pools and pools the admission policy would not let it touch."""
        by_name = {p.name: (i, p) for i, p in enumerate(self.pools)}
        names = self.h.get("pools")
        if names is None:
            watched = [(i, p) for i, p in by_name.values() if p.role in DEFAULT_POOL_ROLES]
            if not watched:
                self.add(
                    (*HEALTH, *spec_path(Health, "backend")),
                    "backend trainyard has no pool to watch: no pool has "
                    f"role {' or '.join(DEFAULT_POOL_ROLES)}",
                    "list the pools under health.pools",
                )
        else:
            watched = []
            for k, name in enumerate(names):
                if name in by_name:
                    watched.append(by_name[name])
                    continue
                close = difflib.get_close_matches(name, sorted(by_name), n=1)
                known = f"known pools: {', '.join(sorted(by_name))}"
                self.add(
                    (*WATCHED, k),
                    f"unknown pool {name!r}",
                    f"did you mean {close[0]!r}?" if close else known,
                )
        self.non_nvidia(watched, explicit=names is not None)
        for i, pool in watched:
            if POOL_LABEL not in pool.node_labels:
                self.add(
                    item("pools", i, Pool, "node_labels"),
                    f"pool {pool.name!r} is watched by the health "
                    f"controller but its nodeLabels lack {POOL_LABEL}",
                    f"the admission policy lets the controller change only nodes labelled {POOL_LABEL}; "
                    f"add {POOL_LABEL}: {pool.name}",
                )
        return watched

    def non_nvidia(self, watched: list[tuple[int, Pool]], explicit: bool) -> None:
        """A watched pool of another vendor's GPUs (amd.com/gpu) is refused: every GPU
        condition reads dcgm-exporter series (NVIDIA's DCGM; generators/model/health.py), so
        its GPUs would never be checked and only the InfiniBand conditions could quarantine
        a node. Reported at its entry of health.pools, or, when the pools come by role, at
        the pool's gpu.resource."""
        names = self.h.get("pools") or []
        for i, pool in watched:
            resource = pool.gpu_resource
            if resource.startswith(NVIDIA_PREFIX):
                continue
            at: Path_ = (
                (*WATCHED, names.index(pool.name)) if explicit else item("pools", i, Pool, "gpu_resource")
            )
            how = "listed in health.pools" if explicit else f"watched by default (role {pool.role})"
            nvidia = [p.name for _, p in watched if p.gpu_resource.startswith(NVIDIA_PREFIX)]
            self.add(
                at,
                f"pool {pool.name!r} ({resource}) is {how}, but every GPU health condition reads "
                "dcgm-exporter, which sees NVIDIA GPUs only: its GPUs would never be checked",
                (
                    f"list only {', '.join(nvidia)} under health.pools"
                    if nvidia
                    else "set health.backend: none"
                )
                + " (docs/adopting.md, 'Pools of other GPUs')",
            )

    def caps(self, watched: list[tuple[int, Pool]]) -> None:
        """Per-pool caps exist and fit their pool; the fleet cap fits the watched pools; a cap
        above the pool's reserve is a warning (quarantine then takes quota capacity away)."""
        cap: Cap = take(Controller, "cap", self.h)
        own = (*CAP, *spec_path(Cap, "pools"))
        by_name = {p.name: p for _, p in watched}
        for name, nodes in cap.pools:  # by name
            pool = by_name.get(name)
            if pool is None:
                close = difflib.get_close_matches(name, sorted(by_name), n=1)
                self.add(
                    (*own, name),
                    f"pool {name!r} is not watched by the health controller",
                    f"did you mean {close[0]!r}?"
                    if close
                    else f"watched pools: {', '.join(sorted(by_name)) or 'none'}",
                    key=True,
                )
            elif nodes > pool.nodes:
                self.add(
                    (*own, name),
                    f"cap of {nodes} nodes is above pool {name!r}'s {pool.nodes} nodes",
                    "a cap can be at most the pool; keep it at or "
                    f"below its reserveNodes ({pool.reserve_nodes})",
                )
        total = sum(p.nodes for _, p in watched)
        if watched and cap.max_nodes > total:
            self.add(
                (*CAP, *spec_path(Cap, "max_nodes")),
                f"maxNodes {cap.max_nodes} is above the {total} nodes of the watched pools",
                "the fleet-wide cap is a blast-radius limit: size it to what "
                "may break at once, at most the reserves together",
            )
        for i, pool in watched:
            nodes = cap.pool_cap(pool)
            if nodes > pool.reserve_nodes and nodes <= pool.nodes:
                where = (
                    (*own, pool.name)
                    if cap.own(pool) is not None
                    else (*CAP, *spec_path(Cap, "max_percent_of_pool"))
                )
                reserve = format_path(item("pools", i, Pool, "reserve_nodes"))
                self.warn(
                    where,
                    f"pool {pool.name!r} may have {nodes} nodes quarantined, above its "
                    f"reserveNodes ({pool.reserve_nodes})",
                    f"quota would then promise GPUs that are quarantined; raise {reserve} or lower the cap",
                )


def check(doc: Document, value: dict[str, Any]) -> list[Problem]:
    """Problems of the health section (backend none: only the pool-taint rule applies)."""
    return _HealthChecker(doc, value).run()
