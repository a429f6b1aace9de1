"""The NodeHealthPolicy file (rendered by the health generator): load, validate, freeze.

Same document reader and the same one-line `file:line:col: error: <what> (<spec path>)`
messages as the TaintPolicy (runtime.reader.Reader). The format is the contract in
gate/README.md ("NodeHealthPolicy file").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..runtime import reader
from ..runtime.document import SpecPath

KIND = "NodeHealthPolicy"
ON_UNAVAILABLE = ("hold",)  # the only mode: an outage must never drain nodes
# The reason is the taint value, so it must be a label value; lower-case DNS label shape.
_REASON = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class Condition:
    """A node is bad for `reason` while `query` returns a series with its `node` label."""

    reason: str
    query: str
    quarantine_after_seconds: float  # bad on every query this long; 0 = on first sight


@dataclass(frozen=True)
class Pool(reader.Selects):
    name: str
    match_labels: reader.MatchLabels
    max_nodes: int | None = None  # the pool's own cap in nodes; None: cap.maxPercentOfPool


@dataclass(frozen=True)
class Cap:
    max_nodes: int  # fleet-wide
    max_percent_of_pool: float  # per pool, of the nodes its selector matches, floored

    def pool_cap(self, pool_nodes: int, own: int | None = None) -> int:
        """Nodes of a pool of `pool_nodes` that may be quarantined at once: the pool's own
        maxNodes when it has one, else the percentage, floored, but never below one node for
        a non-empty pool: 3 % of 32 nodes would be 0, and a small pool with a bad GPU would
        then keep it in service forever."""
        if own is not None:
            return min(own, pool_nodes)
        # Integer arithmetic where possible: 10 % of 30 nodes is 3, not 2.9999.
        share = int(self.max_percent_of_pool * pool_nodes // 100)
        return max(share, 1) if pool_nodes and self.max_percent_of_pool > 0 else share


@dataclass(frozen=True)
class NodeHealthPolicy:
    name: str
    prometheus: reader.PrometheusEndpoint
    reconcile_interval_seconds: float
    dry_run: bool
    taint_key: str
    reason_annotation: str
    since_annotation: str
    conditions: tuple[Condition, ...]  # spec order = reason precedence for the taint value
    release_after_seconds: float
    pools: tuple[Pool, ...]
    cap: Cap

    def taint(self, reason: str = "") -> reader.Taint:
        return reader.Taint(self.taint_key, reason, "NoSchedule")

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(condition.reason for condition in self.conditions)

    @property
    def queries_per_pass(self) -> int:
        return len(self.conditions)


def parse(text: str, source: str) -> NodeHealthPolicy:
    """Validate NodeHealthPolicy text; `source` names the file in error messages."""
    data, parsed = reader.read_document(text, source, _HealthReader)
    return parsed.health_policy(data)


class _HealthReader(reader.Reader):
    def health_policy(self, doc: Any) -> NodeHealthPolicy:
        spec_keys = (
            "taint",
            "annotations",
            "conditions",
            "releaseAfterSeconds",
            "pools",
            "cap",
        )
        name, spec = self.header(doc, KIND, spec_keys)
        mode = spec.get("onPrometheusUnavailable", "hold")
        self.choice(mode, ("spec", "onPrometheusUnavailable"), ON_UNAVAILABLE)  # one mode: nothing to keep
        reason_key, since_key = self.annotations(self.required(spec, "annotations", ("spec",)))
        return NodeHealthPolicy(
            name=name,
            prometheus=self.prometheus(self.required(spec, "prometheus", ("spec",))),
            reconcile_interval_seconds=self.interval(spec),
            dry_run=self.flag(spec.get("dryRun", False), ("spec", "dryRun")),
            taint_key=self.health_taint(self.required(spec, "taint", ("spec",))),
            reason_annotation=reason_key,
            since_annotation=since_key,
            conditions=self.conditions(self.required(spec, "conditions", ("spec",))),
            release_after_seconds=self.seconds(
                self.required(spec, "releaseAfterSeconds", ("spec",)), ("spec", "releaseAfterSeconds")
            ),
            pools=self.pools(self.required(spec, "pools", ("spec",))),
            cap=self.cap(self.required(spec, "cap", ("spec",))),
        )

    def health_taint(self, value: Any) -> str:
        path: SpecPath = ("spec", "taint")
        taint = self.mapping(value, path, ("key", "effect"))  # the value is the reason
        key = self.qualified(self.required(taint, "key", path), (*path, "key"), "key")
        self.effect(taint.get("effect", "NoSchedule"), (*path, "effect"))
        return key

    def annotations(self, value: Any) -> tuple[str, str]:
        path: SpecPath = ("spec", "annotations")
        notes = self.mapping(value, path, ("reason", "since"))
        reason = self.qualified(self.required(notes, "reason", path), (*path, "reason"), "key")
        since = self.qualified(self.required(notes, "since", path), (*path, "since"), "key")
        if reason == since:
            raise self.fail((*path, "since"), f"annotation {since!r} is also the reason annotation")
        return reason, since

    def conditions(self, value: Any) -> tuple[Condition, ...]:
        path: SpecPath = ("spec", "conditions")
        found: list[Condition] = []
        fields = ("reason", "query", "quarantineAfterSeconds")
        for where, entry in self.entries(value, path, "conditions", fields):
            reason = self.string(self.required(entry, "reason", where), (*where, "reason"))
            if len(reason) > 63 or not _REASON.match(reason):
                raise self.fail(
                    (*where, "reason"),
                    f"reason {reason!r} is not [a-z0-9]([-a-z0-9]*[a-z0-9])? "
                    "of at most 63 characters (it becomes the taint value)",
                )
            if any(other.reason == reason for other in found):
                raise self.fail((*where, "reason"), f"duplicate reason {reason!r}")
            query = self.string(self.required(entry, "query", where), (*where, "query"))
            after = self.seconds(
                self.required(entry, "quarantineAfterSeconds", where), (*where, "quarantineAfterSeconds")
            )
            found.append(Condition(reason, query, after))
        return tuple(found)

    def pools(self, value: Any) -> tuple[Pool, ...]:
        path: SpecPath = ("spec", "pools")
        found: list[Pool] = []
        for where, entry in self.entries(value, path, "pools", ("name", "nodeSelector", "maxNodes")):
            name = self.dns_name(entry, where, "pool")
            own = None if "maxNodes" not in entry else self.count(entry["maxNodes"], (*where, "maxNodes"))
            pool = Pool(name, self.match_labels(self.required(entry, "nodeSelector", where), where), own)
            for other in found:
                if other.name == name:
                    raise self.fail((*where, "name"), f"duplicate pool name {name!r}")
                if reader.may_overlap(pool.match_labels, other.match_labels):
                    # A node in two pools would count against two caps.
                    raise self.fail(
                        (*where, "nodeSelector"),
                        f"pools {other.name!r} and {name!r} can select the same node",
                    )
            found.append(pool)
        return tuple(found)

    def cap(self, value: Any) -> Cap:
        path: SpecPath = ("spec", "cap")
        cap = self.mapping(value, path, ("maxNodes", "maxPercentOfPool"))
        max_nodes = self.count(self.required(cap, "maxNodes", path), (*path, "maxNodes"))
        percent = self.required(cap, "maxPercentOfPool", path)
        number = isinstance(percent, int | float) and not isinstance(percent, bool)
        if not number or not 0 <= percent <= 100:
            raise self.fail((*path, "maxPercentOfPool"), f"expected a percentage 0..100, got {percent!r}")
        return Cap(max_nodes, percent)
