"""What changed in generated monitoring content, in the terms a reviewer checks.

Dashboards and alert rules are generated; their raw diff is long single-line PromQL and
dashboard JSON (half of a 50 KB PR comment once). Summarised here: per alert or recording
rule (added, removed, `for`, severity, a threshold in its expression, or "query changed"),
per dashboard panel by title (added, removed, thresholds, a number in its queries, "queries
changed"). The raw diff stays available, collapsed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import yaml

from generators.diff.changes import ObjectChange, is_masked

_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])")


def _numbers_only(before: str, after: str) -> str | None:
    """`78 -> 80` when the two texts differ only in numbers, else None."""
    old, new = _NUMBER.split(before), _NUMBER.split(after)
    if len(old) != len(new) or old[0::2] != new[0::2]:
        return None
    pairs = [f"{a} -> {b}" for a, b in zip(old[1::2], new[1::2], strict=True) if a != b]
    return ", ".join(pairs) or None


def _what(before: str, after: str, noun: str) -> str:
    numbers = _numbers_only(before, after)
    return f"threshold {numbers} in the {noun}" if numbers else f"{noun} changed"


def _rules(doc: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    groups = doc.get("groups") if isinstance(doc, dict) else None
    for group in groups if isinstance(groups, list) else []:
        for rule in group.get("rules") or [] if isinstance(group, dict) else []:
            if isinstance(rule, dict):
                kind = "alert" if "alert" in rule else "record"
                out[f"{kind} {rule.get(kind)}"] = rule
    return out


def _panels(doc: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    stack = list(doc.get("panels") or []) if isinstance(doc, dict) else []
    while stack:
        panel = stack.pop(0)
        if not isinstance(panel, dict):
            continue
        stack[:0] = list(panel.get("panels") or [])  # panels of a collapsed row
        if panel.get("type") == "row":
            continue
        # Grafana's panel id is stable across a retitle ("GPUs above 78 °C" -> "... 80 °C")
        key = f"panel #{panel['id']}" if "id" in panel else f'panel "{panel.get("title", "")}"'
        while key in out:
            key += "'"
        out[key] = panel
    return out


def _rule_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    parts = []
    if old.get("expr") != new.get("expr"):
        parts.append(_what(str(old.get("expr")), str(new.get("expr")), "expression"))
    if old.get("for") != new.get("for"):
        parts.append(f"for {old.get('for', '-')} -> {new.get('for', '-')}")
    severity = [(r.get("labels") or {}).get("severity") for r in (old, new)]
    if severity[0] != severity[1]:
        parts.append(f"severity {severity[0]} -> {severity[1]}")
    if old.get("annotations") != new.get("annotations"):
        parts.append("annotations changed")
    if not parts and old != new:
        parts.append("labels changed")
    return parts


def _panel_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    parts = []
    queries = [
        " ".join(str(t.get("expr", "")) for t in p.get("targets") or [] if isinstance(t, dict))
        for p in (old, new)
    ]
    if queries[0] != queries[1]:
        parts.append(_what(queries[0], queries[1], "queries"))
    steps = [
        json.dumps(((p.get("fieldConfig") or {}).get("defaults") or {}).get("thresholds"), sort_keys=True)
        for p in (old, new)
    ]
    if steps[0] != steps[1]:
        numbers = _numbers_only(steps[0], steps[1])
        parts.append(f"thresholds {numbers}" if numbers else "thresholds changed")
    if not parts and {k: v for k, v in old.items() if k != "title"} != {
        k: v for k, v in new.items() if k != "title"
    }:
        parts.append("display settings changed")
    return parts


def _compare(kind: str, old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> list[str]:
    def show(key: str, item: dict[str, Any]) -> str:
        return f'panel "{item.get("title", "")}"' if kind == "panels" else key

    out = [f"{show(key, item)}: removed" for key, item in old.items() if key not in new]
    for key, item in new.items():
        if key not in old:
            out.append(f"{show(key, item)}: added")
        elif old[key] != item:
            parts = _rule_changes(old[key], item) if kind == "rules" else _panel_changes(old[key], item)
            if kind == "panels" and old[key].get("title") != item.get("title"):
                parts.insert(0, f'title was "{old[key].get("title", "")}"')
            out.append(f"{show(key, item)}: {', '.join(parts)}")
    return out


def _parse(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    try:
        if text.lstrip().startswith("{"):
            return json.loads(text)
        return yaml.load(text, Loader=yaml.CSafeLoader)
    except (ValueError, yaml.YAMLError):
        return None


def _documents(obj: Any) -> Iterator[tuple[str, Any]]:
    """(where, parsed content) of the generated documents in an object."""
    if not isinstance(obj, dict):
        return
    spec: dict[str, Any] = obj["spec"] if isinstance(obj.get("spec"), dict) else {}
    if obj.get("kind") == "PrometheusRule":
        yield "spec", spec
    if isinstance(spec.get("json"), str):
        yield "spec.json", _parse(spec["json"])
    for key, value in sorted((obj.get("data") or {}).items()) if obj.get("kind") == "ConfigMap" else []:
        if not is_masked("ConfigMap", ("data", str(key))):  # never parse (or describe) a secret
            yield f"data[{key}]", _parse(value)


def summarize(change: ObjectChange) -> list[str]:
    """Lines such as `alert GPUTemperatureHigh: threshold 78 -> 80 in the expression`; empty
    for objects that hold no dashboard or rules."""
    if change.action != "changed":
        return []
    old, new = dict(_documents(change.before)), dict(_documents(change.after))
    out = []
    for where, after in new.items():
        before = old.get(where)
        for kind, read in (("rules", _rules), ("panels", _panels)):
            a, b = read(before), read(after)
            if a or b:
                out += _compare(kind, a, b)
    return out
