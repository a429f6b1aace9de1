"""One NodeHealthPolicy pass with its edges: list the pools' nodes, run every condition
query, let state.HealthState decide, record metrics and logs, patch (or, in dry run,
report) the nodes. And the loop around it, which never dies of one bad pass.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..runtime import log, loop
from ..runtime.loop import Clock
from ..runtime.metrics import Liveness
from ..runtime.nodes import NodeGateway, NodePatcher
from ..runtime.program import Controller, Options
from ..runtime.prometheus import QueryFailed
from .metrics import HealthMetrics
from .policy import NodeHealthPolicy
from .state import Change, HealthState, Listing, Outcome

NodeQuery = Callable[[str], frozenset[str]]  # PromQL -> node names; raises QueryFailed


class HealthController:
    def __init__(
        self,
        policy: NodeHealthPolicy,
        query: NodeQuery,
        nodes: NodeGateway,
        metrics: HealthMetrics,
        dry_run: bool,
        clock: Clock = time.monotonic,
        wall_clock: Clock = time.time,
    ) -> None:
        self.policy = policy
        self.state = HealthState(policy)
        self.dry_run = dry_run
        self._query, self._nodes, self._metrics = query, nodes, metrics
        self._patcher = NodePatcher(nodes, dry_run)
        self._clock, self._wall_clock = clock, wall_clock
        self._exported: set[tuple[str, str, str]] = set()  # (node, pool, reason) series
        metrics.cap_fleet.set(policy.cap.max_nodes)

    def reconcile(self, stop: threading.Event | None = None) -> bool:
        """One pass; True if every API call and query succeeded. Raises only on a bug.
        `stop` set (SIGTERM, or the Lease is gone) ends the patching early."""
        try:
            listing = {pool.name: self._nodes.list(pool.label_selector) for pool in self.policy.pools}
        except Exception as err:  # the API or the network; the next pass tries again
            self._metrics.api_failed("cannot list pool nodes", err)
            return False
        bad = self._run_queries(listing)
        outcome = self.state.observe(self._clock(), self._wall_clock(), listing, bad)
        self._record(outcome)
        self._log(outcome)
        ok = outcome.queried
        for change in outcome.changes:
            if stop is not None and stop.is_set():
                return ok
            ok = self._apply(change) and ok
        return ok

    def _run_queries(self, listing: Listing) -> dict[str, frozenset[str]] | None:
        """Every condition's node set, or None if any query failed (the others still run,
        so each condition's bad_nodes and the log say which one failed)."""
        pool_nodes = {node.name for nodes in listing.values() for node in nodes}
        results: dict[str, frozenset[str]] = {}
        failed = False
        for condition in self.policy.conditions:
            try:
                results[condition.reason] = self._query(condition.query)
                self._metrics.bad_nodes.labels(reason=condition.reason).set(
                    len(results[condition.reason] & pool_nodes)
                )
            except Exception as err:  # QueryFailed, or a surprise in the client: no value
                failed = True
                self._metrics.errors.labels(stage="query").inc()
                error = str(err) if isinstance(err, QueryFailed) else f"{type(err).__name__}: {err}"
                log.warning(
                    "health query failed; holding every node as it is",
                    reason=condition.reason,
                    error=error.splitlines()[0] if error else "",
                )
        return None if failed else results

    def _record(self, outcome: Outcome) -> None:
        metrics = self._metrics
        metrics.query_success.set(1 if outcome.queried else 0)
        for pool, count in outcome.pool_nodes.items():
            metrics.pool_nodes.labels(pool=pool).set(count)
            metrics.cap.labels(pool=pool).set(outcome.pool_caps[pool])
        if not outcome.queried:
            return  # held_back and the quarantined set stay as last decided
        metrics.last_success.set(self._wall_clock())
        for pool, held in outcome.held_back.items():
            metrics.held_back.labels(pool=pool).set(held)
        current = {}
        for node, entry in self.state.quarantined.items():
            current[(node, entry.pool, entry.reasons[0] if entry.reasons else "")] = entry.since
        # Remove only what went: clear() and re-adding would let a scrape in between see
        # no quarantined node at all.
        for gone in self._exported - current.keys():
            metrics.quarantined.remove(*gone)
            metrics.quarantined_since.remove(*gone)
        for labels, since in current.items():
            metrics.quarantined.labels(*labels).set(1)
            metrics.quarantined_since.labels(*labels).set(since)
        self._exported = set(current)

    def _log(self, outcome: Outcome) -> None:
        cap = self.policy.cap
        for node, entry, held in outcome.released:
            log.info(
                "node released",
                node=node,
                pool=entry.pool,
                reasons=list(entry.reasons),
                good_seconds=round(held, 3),
                release_after_seconds=self.policy.release_after_seconds,
            )
        for candidate in outcome.candidates:
            log.event(
                logging.INFO if candidate.admitted else logging.WARNING,
                "node quarantined" if candidate.admitted else "quarantine held back by the cap",
                node=candidate.node,
                pool=candidate.pool,
                reasons=list(candidate.reasons),
                bad_seconds=round(self._clock() - candidate.bad_since, 3),
                pool_nodes=outcome.pool_nodes[candidate.pool],
                pool_cap=outcome.pool_caps[candidate.pool],
                max_nodes=cap.max_nodes,
                quarantined=len(self.state.quarantined),
            )

    def _apply(self, change: Change) -> bool:
        """Patch one node (or report it once in dry run); False if the API call failed."""
        node, want = change.node, change.want

        def count(dry_run: bool) -> None:
            self._metrics.node_patches.labels(action=change.action).inc()

        taint = want.taint.value if want.present else None
        failed = self._patcher.apply(node, want, change.action, count, {}, {"taint": taint})
        if failed is None:
            return True
        self._metrics.api_failed("node health update failed", failed, node=node.name, action=change.action)
        return False


def run_health(
    policy: NodeHealthPolicy,
    controller: HealthController,
    metrics: HealthMetrics,
    stop: threading.Event,
    *,
    once: bool,
    liveness: Liveness | None = None,
) -> int:
    """The health controller's reconcile loop (runtime.loop.run, every pass a query pass);
    returns the process exit code."""
    beat = liveness.beat if liveness is not None else (lambda: None)
    return loop.run(
        lambda _query: one_pass(controller, metrics, stop),
        policy.reconcile_interval_seconds,
        stop,
        once=once,
        beat=beat,
    )


def one_pass(controller: HealthController, metrics: HealthMetrics, stop: threading.Event) -> bool:
    """One pass that never raises (runtime.loop.guarded)."""
    return loop.guarded(lambda: controller.reconcile(stop), metrics.errors)


def start(policy: NodeHealthPolicy, options: Options) -> Controller:
    """The health controller for main: its metrics, what the "starting" line names, its loop."""
    metrics = HealthMetrics([pool.name for pool in policy.pools], policy.reasons)
    controller = HealthController(
        policy, options.prometheus.query_nodes, options.nodes, metrics, options.dry_run
    )

    def work(halt: threading.Event) -> int:
        return run_health(policy, controller, metrics, halt, once=options.once, liveness=options.liveness)

    fields = {"pools": [pool.name for pool in policy.pools], "reasons": list(policy.reasons)}
    return Controller(metrics, fields, work)
