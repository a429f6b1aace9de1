"""Mermaid diagram of the cohort -> ClusterQueue tree with GPU quotas (after the change).

GitHub renders ```mermaid blocks in PR comments. Queues whose GPU quota changed are
outlined and show `old → new`.
"""

from __future__ import annotations

import re

from generators.diff.summary import EnvSummary
from generators.model.environment import Environment

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def _id(prefix: str, name: str) -> str:
    return f"{prefix}_{_UNSAFE.sub('_', name)}"  # names are DNS labels: '-' -> '_' is one-to-one


def _queue_label(env: Environment, team: str, summary: EnvSummary | None) -> tuple[str, bool]:
    gpu_resources = {p.gpu_resource for p in env.pools}
    # A cell that is new with quota 0 (a borrowFrom flavor) did not change the quota: "0 → 0"
    # outlined as a change was noise. A new cell with quota is `new N`, not `0 → N`.
    before = {
        (q.flavor, q.resource): q.nominal.before
        for q in (summary.quotas if summary else ())
        if q.team == team and q.nominal.changed and (q.nominal.before or "0") != q.nominal.after
    }
    parts, changed = [], False
    for flavor in env.queues[team]:
        for q in flavor.quotas:
            if q.resource.name not in gpu_resources:
                continue
            now = q.resource.show(q.nominal)
            key = (flavor.pool, q.resource.name)
            unit = "GPUs" if len(gpu_resources) == 1 else q.resource.name
            if key in before:
                changed = True
                was = before[key]
                parts.append(f"{flavor.pool}: {'new ' if was is None else was + ' → '}{now} {unit}")
            elif q.nominal:
                parts.append(f"{flavor.pool}: {now} {unit}")
    return "<br/>".join([team, *parts]), changed


def diagram(env: Environment, summary: EnvSummary | None) -> str:
    lines = ["flowchart LR"]
    for cohort in env.cohorts:
        lines.append(f'  {_id("c", cohort.name)}(["cohort {cohort.name}"])')
    for cohort in env.cohorts:
        if cohort.parent:
            lines.append(f"  {_id('c', cohort.parent)} --> {_id('c', cohort.name)}")
    changed_ids = []
    for team in env.teams:
        label, changed = _queue_label(env, team.name, summary)
        lines.append(f'  {_id("q", team.name)}["{label}"]')
        if team.cohort:
            lines.append(f"  {_id('c', team.cohort)} --> {_id('q', team.name)}")
        if changed:
            changed_ids.append(_id("q", team.name))
    if changed_ids:
        lines.append("  classDef changed stroke:#d97706,stroke-width:3px")
        lines.append(f"  class {','.join(changed_ids)} changed")
    return "\n".join(lines)
