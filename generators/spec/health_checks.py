"""Semantic rules of the `health` section that its schema cannot express.

Called from semantics.check; each Problem sits at the offending value of the file.
"""

from __future__ import annotations

import difflib
from typing import Any

from generators import kubernetes
from generators.errors import Problem, format_path
from generators.spec.source import Document

Path_ = tuple[str | int, ...]


class _HealthChecker:
    def __init__(self, doc: Document, value: dict[str, Any]) -> None:
        self.doc = doc
        self.v = value
        self.h: dict[str, Any] = value["health"]
        self.problems: list[Problem] = []

    def add(self, path: Path_, message: str, hint: str = "") -> None:
        self.problems.append(Problem(self.doc.locate(path), message, format_path(path), hint))

    def run(self) -> list[Problem]:
        self.kubernetes_version()
        self.pool_taints()
        if self.h["backend"] == "trainyard":
            watched = self.pools()
            self.caps(watched)
        return self.problems

    def kubernetes_version(self) -> None:
        """Inference pods get the quarantine toleration from a MutatingAdmissionPolicy: without
        one, quarantining an inference node would also stop new inference pods there."""
        version = self.v["cluster"]["kubernetesVersion"]
        if self.h["backend"] != "none" and not kubernetes.has_mutating_admission(version):
            self.add(("health", "backend"), f"health backend {self.h['backend']} needs Kubernetes "
                     f"{kubernetes.name(kubernetes.MUTATING_ADMISSION)} or newer, the cluster runs {version}",
                     "inference pods get the quarantine toleration from a MutatingAdmissionPolicy "
                     "(admissionregistration.k8s.io/v1, GA in 1.36); set backend: none until the "
                     "cluster is upgraded")

    def pool_taints(self) -> None:
        """A pool that declares a quarantine taint gives its flavor the toleration: training
        admitted to the pool would then run on quarantined nodes, and sync-inventory would
        count them as quota."""
        from generators.model.health import TAINT_KEY  # the model package imports the spec

        keys = {TAINT_KEY} if self.h["backend"] == "trainyard" else set()
        if self.h["backend"] == "nvsentinel":
            keys = {t["key"] for t in self.h["nvsentinel"]["taints"]}
        for i, pool in enumerate(self.v["pools"]):
            for j, taint in enumerate(pool["taints"]):
                if taint["key"] in keys:
                    self.add(("pools", i, "taints", j, "key"), f"pool {pool['name']!r} declares the "
                             f"quarantine taint {taint['key']!r}", "training admitted to the pool would "
                             "tolerate quarantine; remove the taint from the pool")

    def pools(self) -> list[tuple[int, dict[str, Any]]]:
        """(index in pools, pool) of every pool the controller watches; problems for names
        that are not pools and pools the admission policy would not let it touch."""
        from generators.model.health import DEFAULT_POOL_ROLES, POOL_LABEL

        by_name = {p["name"]: (i, p) for i, p in enumerate(self.v["pools"])}
        names = self.h.get("pools")
        if names is None:
            watched = [(i, p) for i, p in by_name.values() if p["role"] in DEFAULT_POOL_ROLES]
            if not watched:
                self.add(("health", "backend"), "backend trainyard has no pool to watch: no pool has "
                         f"role {' or '.join(DEFAULT_POOL_ROLES)}", "list the pools under health.pools")
        else:
            watched = []
            for k, name in enumerate(names):
                if name in by_name:
                    watched.append(by_name[name])
                    continue
                close = difflib.get_close_matches(name, sorted(by_name), n=1)
                known = f"known pools: {', '.join(sorted(by_name))}"
                self.add(("health", "pools", k), f"unknown pool {name!r}",
                         f"did you mean {close[0]!r}?" if close else known)
        for i, pool in watched:
            if POOL_LABEL not in pool["nodeLabels"]:
                self.add(("pools", i, "nodeLabels"), f"pool {pool['name']!r} is watched by the health "
                         f"controller but its nodeLabels lack {POOL_LABEL}",
                         f"the admission policy lets the controller change only nodes labelled {POOL_LABEL}; "
                         f"add {POOL_LABEL}: {pool['name']}")
        return watched

    def caps(self, watched: list[tuple[int, dict[str, Any]]]) -> None:
        percent = self.h["cap"]["maxPercentOfPool"]
        zero = [f"{p['name']} ({p['nodes']} nodes)" for _, p in watched if percent * p["nodes"] // 100 == 0]
        if zero:
            smallest = min(p["nodes"] for _, p in watched)
            self.add(("health", "cap", "maxPercentOfPool"), f"{percent}% of {', '.join(zero)} rounds down "
                     "to 0 nodes: the controller could never quarantine a node there",
                     f"raise it to at least {-(-100 // smallest)}, or leave the pool out of health.pools")


def check(doc: Document, value: dict[str, Any]) -> list[Problem]:
    """Problems of the health section (backend none: only the pool-taint rule applies)."""
    return _HealthChecker(doc, value).run()
