"""Terminal output: summary first, then every changed object with its changed fields.

Colour only on a terminal, never when NO_COLOR is set (https://no-color.org: any
non-empty value) or --no-color is given.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from typing import TextIO

from generators.diff import generated, textdiff, wording
from generators.diff.changes import ObjectChange
from generators.diff.fields import FieldChange
from generators.diff.report import EnvReport, Report

LONG_LINE = 160  # a changed line longer than this is shown where it differs (PromQL, JSON)
_CODES = {"bold": "1", "red": "31", "green": "32", "yellow": "33", "dim": "2"}
_MARK = {"added": ("+", "green"), "removed": ("-", "red"), "changed": ("~", "yellow")}


def use_colour(stream: TextIO, disabled: bool) -> bool:
    return not disabled and not os.environ.get("NO_COLOR") and stream.isatty()


class Palette:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, style: str, text: str) -> str:
        return f"\x1b[{_CODES[style]}m{text}\x1b[0m" if self.enabled else text


def _section(title: str, lines: Iterable[str], paint: Palette) -> list[str]:
    body = [f"    {line}" for line in lines]
    return [f"  {paint('bold', title)}", *body] if body else []


def _summary(env: EnvReport, paint: Palette) -> list[str]:
    if env.summary is None:
        return [f"  {paint('yellow', 'note')}: {env.note}"]
    s = env.summary
    return [
        *_section("Pools", map(wording.pool, s.pools), paint),
        *_section(
            "Quotas",
            [
                *(wording.quota(q) for q in s.quotas if q.is_gpu),
                *filter(None, [wording.other_quotas(s.quotas)]),
            ],
            paint,
        ),
        *_section("Priority tiers", map(wording.tier, s.tiers), paint),
        *_section("Overflow", map(wording.setting, s.overflow), paint),
        *_section("Health quarantine", [*map(wording.setting, s.health), *map(wording.cap, s.caps)], paint),
    ]


def _text_block_diff(change: ObjectChange, fc: FieldChange, paint: Palette) -> list[str]:
    """The changed lines of an embedded text (a config file in a ConfigMap), not just
    "<40 lines of text> -> <40 lines of text>"."""
    if (
        change.masked(fc)
        or not (isinstance(fc.before, str) and isinstance(fc.after, str))
        or "\n" not in fc.before + fc.after
    ):
        return []
    lines = list(difflib.unified_diff(fc.before.splitlines(), fc.after.splitlines(), lineterm="", n=0))[2:]
    lines = textdiff.narrow_lines(lines, LONG_LINE)
    colours = {"+": "green", "-": "red", "@": "dim"}
    return [f"        {paint(colours[line[0]], line) if line[:1] in colours else line}" for line in lines]


def _object(change: ObjectChange, paint: Palette) -> list[str]:
    mark, colour = _MARK[change.action]
    lines = [f"{paint(colour, mark)} {change.key.show()}  {paint('dim', change.path)}"]
    lines += [f"    {paint('bold', line)}" for line in generated.summarize(change)]
    for fc in change.fields:
        lines.append(f"    {wording.field(change, fc)}")
        lines += _text_block_diff(change, fc, paint)
    return lines


def render(report: Report, paint: Palette) -> str:
    lines = [f"trainyard diff: working tree vs {report.base.label} ({report.base.short})"]
    for env in report.envs:
        lines.append("")
        summary_empty = env.summary is not None and env.summary.empty
        if not env.changes and summary_empty:
            lines.append(f"{paint('bold', env.name)}: no changes")
            continue
        lines.append(f"{paint('bold', env.name)}: {wording.counts(env)}")
        lines += _summary(env, paint)
        objects: list[str] = []
        for change in env.changes:
            objects += _object(change, paint)
        lines += _section("Objects", objects, paint)
    return "\n".join(lines) + "\n"
