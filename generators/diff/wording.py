"""The words of a diff, shared by the text and markdown outputs, so both say the same thing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from generators.diff import textdiff
from generators.diff.changes import ObjectChange
from generators.diff.fields import MISSING, FieldChange, format_path
from generators.diff.report import EnvReport
from generators.diff.summary import CapSummary, Delta, PoolSummary, QuotaSummary, SettingSummary, TierSummary

MAX_VALUE_CHARS = 80


def counts(env: EnvReport) -> str:
    """`2 changed, 1 added, 0 removed`: the objects of one environment."""
    return f"{env.count('changed')} changed, {env.count('added')} added, {env.count('removed')} removed"


def delta(value: Delta[Any], arrow: str = "->", absent: str = "-", unit: str = "") -> str:
    """`1024 -> 960` when it changed, `1024` when not; `absent` stands for None."""

    def one(v: Any) -> str:
        return absent if v is None else f"{v}{unit}"

    if not value.changed:
        return one(value.after)
    return f"{one(value.before)} {arrow} {one(value.after)}"


def value(v: Any) -> str:
    """A field value on one line: JSON-ish scalars, a line count for text blocks."""
    if v is MISSING:
        return "(absent)"
    if isinstance(v, str) and "\n" in v.rstrip("\n"):
        return f"<{v.count(chr(10)) + (0 if v.endswith(chr(10)) else 1)} lines of text>"
    text = json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=False, default=str)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def field(change: ObjectChange, fc: FieldChange, arrow: str = "->") -> str:
    """`spec.x.nominalQuota: "400" -> "384"`, or `data.password: changed (masked)`."""
    path = format_path(fc.path)
    if change.masked(fc):
        what = "added" if fc.before is MISSING else "removed" if fc.after is MISSING else "changed"
        return f"{path}: {what} (masked)"
    if (
        isinstance(fc.before, str)
        and isinstance(fc.after, str)
        and "\n" not in fc.before + fc.after
        and max(len(fc.before), len(fc.after)) > MAX_VALUE_CHARS
    ):
        old, new, at = textdiff.narrow(fc.before, fc.after)  # identical prefixes told nothing
        return (
            f"{path}: changed from character {at + 1} of {len(fc.before)}: "
            f"{json.dumps(old, ensure_ascii=False)} {arrow} {json.dumps(new, ensure_ascii=False)}"
        )
    if fc.before is MISSING:  # an added field or list item, not a change from some "absent" value
        return f"{path}: added {value(fc.after)}"
    if fc.after is MISSING:
        return f"{path}: removed (was {value(fc.before)})"
    return f"{path}: {value(fc.before)} {arrow} {value(fc.after)}"


def pool(row: PoolSummary, arrow: str = "->") -> str:
    if row.presence != "changed":
        side = "after" if row.presence == "added" else "before"
        nodes, reserve = getattr(row.nodes, side), getattr(row.reserve_nodes, side)
        return (
            f"{row.name}: pool {row.presence} ({row.role}, {row.gpu_model}): {nodes} nodes, "
            f"reserve {reserve}, schedulable {row.gpu_resource} {getattr(row.schedulable_gpus, side)}"
        )
    text = (
        f"{row.name}: nodes {delta(row.nodes, arrow)}, reserve {delta(row.reserve_nodes, arrow)}, "
        f"schedulable {row.gpu_resource} {delta(row.schedulable_gpus, arrow)}"
    )
    if row.per_node:
        text += "; per node: " + ", ".join(f"{name} {delta(d, arrow)}" for name, d in row.per_node)
    return text


def other_quotas(rows: Sequence[QuotaSummary]) -> str | None:
    """One line for the CPU, memory and extra-resource cells: they move with the GPUs
    (quotas are whole nodes), so listing them would bury the GPU lines."""
    others = [q for q in rows if not q.is_gpu]
    if not others:
        return None
    names = ", ".join(dict.fromkeys(q.resource for q in others))
    return (
        f"and {len(others)} {names} quota cell{'s' if len(others) != 1 else ''} "
        "(whole nodes: they follow the GPUs; each is in the object diffs and --format json)"
    )


def quota(row: QuotaSummary, arrow: str = "->") -> str:
    """`research [train-h100-a]: nvidia.com/gpu 400 -> 384; borrowing limit 784 -> 752`; a cell
    that did not exist on one side says so (`new: ...`, `removed, was ...`), so an absent value
    never reads as `none`, which means no limit."""
    if row.presence != "changed":
        side = "after" if row.presence == "added" else "before"
        values = [
            f"share {getattr(row.share, side)}%",
            f"{getattr(row.nodes, side)} nodes",
            f"{row.resource} {getattr(row.nominal, side)}",
            *(
                f"{label} {getattr(limit, side) or 'none'}"
                for label, limit in (
                    ("borrowing limit", row.borrowing_limit),
                    ("lending limit", row.lending_limit),
                )
            ),
        ]
        what = "new" if row.presence == "added" else "removed, was"
        return f"{row.team} [{row.flavor}]: {what} {', '.join(values)}"
    text = f"{row.team} [{row.flavor}]: {holding(row, arrow)}; {row.resource} {delta(row.nominal, arrow)}"
    for label, limit in (("borrowing limit", row.borrowing_limit), ("lending limit", row.lending_limit)):
        if limit.changed:
            text += f"; {label} {delta(limit, arrow, absent='none')}"
    return text


def holding(row: QuotaSummary, arrow: str = "->") -> str:
    """`share 20% -> 25%, 50 -> 62 nodes`: what the quota was computed from."""
    return f"share {delta(row.share, arrow, unit='%')}, {delta(row.nodes, arrow)} nodes"


def tier(row: TierSummary, arrow: str = "->") -> str:
    if row.presence != "changed":
        side = "after" if row.presence == "added" else "before"
        return (
            f"{row.name}: tier {row.presence} (priority {getattr(row.value, side)}, "
            f"{getattr(row.preemption_policy, side)})"
        )
    parts = [
        f"{label} {delta(d, arrow)}"
        for label, d in (("priority", row.value), ("preemption policy", row.preemption_policy))
        if d.changed
    ]
    return f"{row.name}: {', '.join(parts)}"


def setting(row: SettingSummary, arrow: str = "->") -> str:
    before, after = row.value.before, row.value.after
    if isinstance(before, str) and isinstance(after, str) and max(len(before), len(after)) > MAX_VALUE_CHARS:
        old, new, at = textdiff.narrow(before, after)  # a PromQL query: where it changed, not all of it
        return f"{row.label} changed from character {at + 1}: {old} {arrow} {new}"
    return f"{row.label} {delta(row.value, arrow, absent='(unset)')}"  # label ends in its unit


def _nodes(n: int) -> str:
    return f"{n} node{'' if n == 1 else 's'}"


def cap(row: CapSummary, arrow: str = "->") -> str:
    """`pool train-h100 may now lose 3 nodes to quarantine at once (was 1; reserve 1)`."""
    before, after = row.cap.before, row.cap.after
    if after is None:
        return (
            f"pool {row.pool} is no longer watched: quarantine takes none of its nodes "
            f"(was up to {_nodes(before or 0)} at once)"
        )
    reserve = delta(row.reserve, arrow)
    was = "was not watched" if before is None else f"was {before}"
    text = f"pool {row.pool} may now lose {_nodes(after)} to quarantine at once ({was}; reserve {reserve})"
    if row.reserve.after is not None and after > row.reserve.after:
        text += ": above its reserve, so quarantined nodes take capacity the quotas promise"
    return text
