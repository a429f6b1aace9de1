"""`--format markdown`: the PR comment, always under GitHub's 65,536-character limit.

Order: heading, per-environment counts, then per environment its summary tables, the
cohort/queue diagram and one collapsible unified diff per object. When the whole does not
fit, what goes first is the least read: per-object diffs (in rendered-path order, each one
that still fits is kept), then the diagrams, then summary rows beyond a shrinking cap.
Every cut says how much was left out and how to see it locally.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from generators.diff import generated, wording
from generators.diff.changes import ObjectChange
from generators.diff.fields import format_path
from generators.diff.mdsummary import cell, diagram, summary_tables, table
from generators.diff.report import EnvReport, Report
from generators.diff.textdiff import unified

COMMENT_LIMIT = 65_536  # GitHub rejects longer issue/PR comments
MARKER = "<!-- trainyard-diff -->"  # lets a workflow find and update its own sticky comment
MAX_DIFF_LINES = 400  # one huge object (a dashboard) must not crowd out the others
MAX_FIELD_PATHS = 25
ROW_CAPS = (1000, 200, 50, 10, 0)
_MARK = {"added": "🟢", "removed": "🔴", "changed": "🟡"}  # GitHub shows them in colour


def fence(content: str, info: str) -> str:
    """A code fence longer than any backtick run inside `content`."""
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{content.rstrip(chr(10))}\n{ticks}"


def object_details(change: ObjectChange) -> str:
    paths = [
        wording.field(change, fc, "→") if change.masked(fc) else format_path(fc.path) for fc in change.fields
    ]
    shown = "".join(f"- `{p}`\n" for p in paths[:MAX_FIELD_PATHS])
    if len(paths) > MAX_FIELD_PATHS:
        shown += f"- … and {len(paths) - MAX_FIELD_PATHS} more fields\n"
    body, cut = unified(change, MAX_DIFF_LINES)
    if cut:
        body += f"… {cut} more diff lines; run `python generate.py diff` locally\n"
    fields = f", {len(paths)} field{'s' if len(paths) != 1 else ''}" if paths else ""
    described = generated.summarize(change)
    if described:  # what changed in dashboards and rules, visible; the raw diff stays collapsed
        shown_above = "".join(f"- {cell(line)}\n" for line in described[:MAX_FIELD_PATHS])
        if len(described) > MAX_FIELD_PATHS:
            shown_above += f"- … and {len(described) - MAX_FIELD_PATHS} more\n"
        return (
            f"{_MARK[change.action]} **{change.key.show()}** (generated; `{change.path}`):\n\n"
            f"{shown_above}\n<details><summary>raw diff{fields}</summary>\n\n{shown}\n"
            f"{fence(body, 'diff')}\n\n</details>"
        )
    return (
        f"<details><summary>{_MARK[change.action]} {change.action} <code>{change.key.show()}</code>"
        f"{fields}</summary>\n\n`{change.path}`\n\n{shown}\n{fence(body, 'diff')}\n\n</details>"
    )


@dataclass
class _EnvParts:
    env: EnvReport
    details: list[str]

    def head(self, max_rows: int, with_diagram: bool) -> str:
        env = self.env
        out = [f"### `{env.name}`: {wording.counts(env)}"]
        if env.summary is None:
            out.append(f"> [!NOTE]\n> {env.note}")
        elif not env.summary.empty:
            out.append(summary_tables(env.summary, max_rows))
        if with_diagram and env.model is not None and env.model.teams:
            out.append(
                "<details><summary>Cohort and ClusterQueue tree, GPU quota after the change"
                "</summary>\n\n" + fence(diagram(env.model, env.summary), "mermaid") + "\n\n</details>"
            )
        return "\n\n".join(out)


def _has_changes(env: EnvReport) -> bool:
    return bool(env.changes) or (env.summary is not None and not env.summary.empty)


def _heading(report: Report) -> str:
    changed = [e for e in report.envs if _has_changes(e)]
    title = (
        f"{len(changed)} environment{'s' if len(changed) != 1 else ''} changed" if changed else "no changes"
    )
    rows = [(f"`{e.name}`", e.count("changed"), e.count("added"), e.count("removed")) for e in report.envs]
    return (
        f"{MARKER}\n## trainyard diff: {title}\n\nRendered from this branch's environments/ and "
        f"compared, object by object, with `rendered/` at {report.base.label} "
        f"(`{report.base.short}`).\n\n"
        + table(("environment", "changed objects", "added", "removed"), rows, len(rows))
        + _immutable(report)
    )


def _immutable(report: Report) -> str:
    """Changed immutable fields, as `generate.py diff` prints them: never cut for size."""
    lines = report.immutable_lines()
    if not lines:
        return ""
    verdict = (
        "the API would refuse some in place: the diff fails; each line names the migration"
        if report.refused
        else "Argo CD deletes and recreates these objects"
    )
    return f"\n\n**Immutable fields changed** ({verdict}; docs/immutable-fields.md):\n\n" + fence(
        "\n".join(lines), "text"
    )


def _omitted_note(omitted: int, total: int, report: Report, limit: int) -> str:
    whose = "GitHub's" if limit == COMMENT_LIMIT else "the"
    return (
        f"_{omitted} of {total} per-object diffs omitted to keep this comment under {whose} "
        f"{limit:,}-character limit. See them all locally: "
        f"`python generate.py diff --base {report.base.short}`._"
    )


def _assemble(
    report: Report,
    envs: list[_EnvParts],
    max_rows: int,
    with_diagrams: bool,
    detail_budget: int | None,
    limit: int,
) -> tuple[str, int]:
    """The comment; with a budget, details are kept in order while they fit. Returns the
    text and the number of details left out."""
    blocks = [_heading(report)]
    omitted_total = 0
    budget = detail_budget
    for parts in envs:
        blocks.append(parts.head(max_rows, with_diagrams))
        kept = []
        for detail in parts.details:
            if budget is None or len(detail) + 2 <= budget:
                kept.append(detail)
                budget = None if budget is None else budget - len(detail) - 2
        omitted = len(parts.details) - len(kept)
        omitted_total += omitted
        blocks += kept
        if omitted:
            blocks.append(_omitted_note(omitted, len(parts.details), report, limit))
    return "\n\n".join(blocks) + "\n", omitted_total


CUT = "\n\n_Comment cut at the size limit; run `python generate.py diff` locally._\n"


def render(report: Report, limit: int = COMMENT_LIMIT, tail: str = "") -> str:
    """The comment, at most `limit` characters (leave room when a workflow adds its own text).
    `tail` (the what-if section, generators/diff/whatif.py) goes last and whole, the
    per-object diffs giving way to it; only a limit too small for the heading besides drops it."""
    if tail:
        room = limit - len(tail) - 2
        body = _fitted(report, room, limit)
        if len(body) <= room and not body.endswith(CUT):
            return body + "\n" + tail + "\n"
    return _fitted(report, limit, limit)


def _fitted(report: Report, room: int, limit: int) -> str:
    """The comment within `room` characters; notes name `limit`, the comment's own."""
    envs = [_EnvParts(e, [object_details(c) for c in e.changes]) for e in report.envs if _has_changes(e)]
    full, _ = _assemble(report, envs, ROW_CAPS[0], True, None, limit)
    if len(full) <= room:
        return full
    for with_diagrams in (True, False):
        for max_rows in ROW_CAPS:
            frame, _ = _assemble(report, envs, max_rows, with_diagrams, 0, limit)  # every detail omitted
            spare = room - len(frame)
            if spare >= 0:
                text, _ = _assemble(report, envs, max_rows, with_diagrams, spare, limit)
                if len(text) <= room:
                    return text
    return frame[: max(0, room - len(CUT))] + CUT
