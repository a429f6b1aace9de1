"""The top of one environment's part of the PR comment: its summary tables in markdown, and
the Mermaid diagram of its cohort -> ClusterQueue tree with GPU quotas (after the change):
one box per ClusterQueue, so a team's `-flex` queue shows the pools a job reaches only by
naming it.

GitHub renders ```mermaid blocks in PR comments. Queues whose GPU quota changed are
outlined and show `old → new`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from generators.diff import wording
from generators.diff.summary import Delta, EnvSummary
from generators.model.environment import Environment
from generators.model.types import ClusterQueue

ARROW = "→"
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header: Sequence[str], rows: Sequence[Sequence[object]], max_rows: int) -> str:
    """A GitHub table of at most `max_rows` rows, with a note counting the rest."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows[:max_rows]]
    if len(rows) > max_rows:
        lines.append(
            f"\n_… and {len(rows) - max_rows} more rows: run `python generate.py diff` "
            "locally for all of them._"
        )
    return "\n".join(lines)


def _d(value: Delta[Any], absent: str = "-") -> str:
    return wording.delta(value, ARROW, absent)


def _q(presence: str, value: Delta[Any], absent: str = "-") -> str:
    """A quota cell: a cell that did not exist on one side shows only the side it has."""
    if presence == "added":
        return absent if value.after is None else str(value.after)
    if presence == "removed":
        return absent if value.before is None else str(value.before)
    return _d(value, absent)


def _share(presence: str, value: Delta[Any]) -> str:
    side = {"added": value.after, "removed": value.before}.get(presence)
    if presence != "changed":
        return "-" if side is None else f"{side}%"
    return wording.delta(value, ARROW, unit="%")


def _pools(summary: EnvSummary, max_rows: int) -> str:
    return "**Capacity per pool**\n\n" + table(
        ("pool", "change", "role", "GPU", "nodes", "reserve", "schedulable GPUs", "per node"),
        [
            (
                p.name,
                p.presence,
                p.role,
                p.gpu_model,
                _d(p.nodes),
                _d(p.reserve_nodes),
                _d(p.schedulable_gpus),
                ", ".join(f"{n} {_d(d)}" for n, d in p.per_node) or "",
            )
            for p in summary.pools
        ],
        max_rows,
    )


def _quotas(summary: EnvSummary, max_rows: int) -> str:
    """The GPU cells as a table; the other resources' changes counted in one sentence."""
    others = wording.other_quotas(summary.quotas)
    return (
        "**GPU quota per team and flavor** (changed cells; `none`: no limit; `added`: the "
        "queue did not have this flavor before, `removed`: it has not after)\n\n"
        + table(
            (
                "team",
                "flavor",
                "change",
                "share",
                "nodes",
                "resource",
                "nominal quota",
                "borrowing limit",
                "lending limit",
            ),
            [
                (
                    q.team,
                    q.flavor,
                    q.presence,
                    _share(q.presence, q.share),
                    _q(q.presence, q.nodes),
                    q.resource,
                    _q(q.presence, q.nominal),
                    _q(q.presence, q.borrowing_limit, "none"),
                    _q(q.presence, q.lending_limit, "none"),
                )
                for q in summary.quotas
                if q.is_gpu
            ],
            max_rows,
        )
        + (f"\n\n_{others[0].upper()}{others[1:]}._" if others else "")
    )


def _tiers(summary: EnvSummary, max_rows: int) -> str:
    return "**Priority tiers**\n\n" + table(
        ("tier", "change", "priority", "preemption policy"),
        [(t.name, t.presence, _d(t.value), _d(t.preemption_policy)) for t in summary.tiers],
        max_rows,
    )


def _overflow(summary: EnvSummary, max_rows: int) -> str:
    return "**Overflow: providers and gate thresholds**\n\n" + table(
        ("setting", "value"), [(o.label, _d(o.value, "(unset)")) for o in summary.overflow], max_rows
    )


def _health(summary: EnvSummary, max_rows: int) -> str:
    """A list, not a table: each setting reads as a sentence (`max_rows` does not apply)."""
    return "**Health quarantine**\n\n" + "\n".join(
        [
            *(f"- {wording.setting(h, ARROW)}" for h in summary.health),
            *(f"- {wording.cap(c, ARROW)}" for c in summary.caps),
        ]
    )


def summary_tables(summary: EnvSummary, max_rows: int) -> str:
    """Pools, quotas, tiers, overflow and health settings that changed; empty string if none did."""
    sections = (
        (bool(summary.pools), _pools),
        (bool(summary.quotas), _quotas),
        (bool(summary.tiers), _tiers),
        (bool(summary.overflow), _overflow),
        (bool(summary.health or summary.caps), _health),
    )
    return "\n\n".join(part(summary, max_rows) for changed, part in sections if changed)


def _id(prefix: str, name: str) -> str:
    return f"{prefix}_{_UNSAFE.sub('_', name)}"  # names are DNS labels: '-' -> '_' is one-to-one


def _queue_label(env: Environment, queue: ClusterQueue, summary: EnvSummary | None) -> tuple[str, bool]:
    """One ClusterQueue's box: its name (a topology queue says so) and the GPU quota of each
    of its flavors, where a job naming that queue finds it: a team with topology pools keeps
    its plain pools in `<team>-flex`, and a job must name that queue to use them."""
    gpu_resources = {p.gpu_resource for p in env.pools}
    # A cell that is new with quota 0 (a borrowFrom flavor) did not change the quota: "0 → 0"
    # outlined as a change was noise. A new cell with quota is `new N`, not `0 → N`.
    before = {
        (q.flavor, q.resource): q.nominal.before
        for q in (summary.quotas if summary else ())
        if q.team == queue.team and q.nominal.changed and (q.nominal.before or "0") != q.nominal.after
    }
    parts, changed = [], False
    for flavor in queue.flavors:
        for q in flavor.quotas:
            if q.resource.name not in gpu_resources:
                continue
            now = q.resource.show(q.nominal)
            key = (flavor.pool, q.resource.name)
            unit = "GPUs" if len(gpu_resources) == 1 else q.resource.name
            if key in before:
                changed = True
                was = before[key]
                parts.append(f"{flavor.pool}: {'new ' if was is None else f'{was} {ARROW} '}{now} {unit}")
            elif q.nominal:
                parts.append(f"{flavor.pool}: {now} {unit}")
            elif q.borrowing_limit is None or q.borrowing_limit:  # a borrowFrom flavor: no quota of its own
                limit = "" if q.borrowing_limit is None else f" up to {q.resource.show(q.borrowing_limit)}"
                parts.append(f"{flavor.pool}: borrows{limit} {unit}")
    title = f"{queue.name} (topology)" if queue.topology else queue.name
    return "<br/>".join([title, *parts]), changed


def diagram(env: Environment, summary: EnvSummary | None) -> str:
    lines = ["flowchart LR"]
    for cohort in env.cohorts:
        lines.append(f'  {_id("c", cohort.name)}(["cohort {cohort.name}"])')
    for cohort in env.cohorts:
        if cohort.parent:
            lines.append(f"  {_id('c', cohort.parent)} --> {_id('c', cohort.name)}")
    cohorts = {t.name: t.cohort for t in env.teams}
    changed_ids = []
    for queue in env.cluster_queues:
        label, changed = _queue_label(env, queue, summary)
        lines.append(f'  {_id("q", queue.name)}["{label}"]')
        parent = cohorts.get(queue.team)
        if parent:
            lines.append(f"  {_id('c', parent)} --> {_id('q', queue.name)}")
        if changed:
            changed_ids.append(_id("q", queue.name))
    if changed_ids:
        lines.append("  classDef changed stroke:#d97706,stroke-width:3px")
        lines.append(f"  class {','.join(changed_ids)} changed")
    return "\n".join(lines)
