"""`--format json`: a stable document for machines (schema in docs/workflow.md).

Stable means: keys always present (null when not applicable), lists in the same order as
the text output, `schemaVersion` bumped on any incompatible change. Masked values are
null with `"masked": true`.
"""

from __future__ import annotations

import json
from typing import Any

from generators.diff.changes import ObjectChange
from generators.diff.fields import MISSING, FieldChange, format_path
from generators.diff.report import EnvReport, Report
from generators.diff.summary import Delta, EnvSummary

SCHEMA_VERSION = 1


def _delta(d: Delta[Any]) -> dict[str, Any]:
    return {"before": d.before, "after": d.after}


def _summary(s: EnvSummary) -> dict[str, Any]:
    return {
        "pools": [
            {
                "name": p.name,
                "change": p.presence,
                "role": p.role,
                "gpuModel": p.gpu_model,
                "gpuResource": p.gpu_resource,
                "nodes": _delta(p.nodes),
                "reserveNodes": _delta(p.reserve_nodes),
                "schedulableGpus": _delta(p.schedulable_gpus),
                "perNode": [{"resource": name, **_delta(d)} for name, d in p.per_node],
            }
            for p in s.pools
        ],
        "quotas": [
            {
                "team": q.team,
                "flavor": q.flavor,
                "resource": q.resource,
                "isGpu": q.is_gpu,
                "change": q.presence,
                "share": _delta(q.share),
                "nodes": _delta(q.nodes),
                "nominalQuota": _delta(q.nominal),
                "borrowingLimit": _delta(q.borrowing_limit),
                "lendingLimit": _delta(q.lending_limit),
            }
            for q in s.quotas
        ],
        "priorityTiers": [
            {
                "name": t.name,
                "change": t.presence,
                "value": _delta(t.value),
                "preemptionPolicy": _delta(t.preemption_policy),
            }
            for t in s.tiers
        ],
        "overflow": [{"setting": o.label, **_delta(o.value)} for o in s.overflow],
        "health": [{"setting": h.label, **_delta(h.value)} for h in s.health],
        "quarantineCaps": [
            {"pool": c.pool, "capNodes": _delta(c.cap), "reserveNodes": _delta(c.reserve)} for c in s.caps
        ],
    }


def _field(change: ObjectChange, fc: FieldChange) -> dict[str, Any]:
    masked = change.masked(fc)
    return {
        "path": format_path(fc.path),
        "before": None if masked or fc.before is MISSING else fc.before,
        "after": None if masked or fc.after is MISSING else fc.after,
        "beforePresent": fc.before is not MISSING,
        "afterPresent": fc.after is not MISSING,
        "masked": masked,
    }


def _object(change: ObjectChange) -> dict[str, Any]:
    return {
        "change": change.action,
        "apiVersion": change.api_version,
        "group": change.key.group,
        "kind": change.key.kind,
        "namespace": change.key.namespace or None,
        "name": change.key.name,
        "path": change.path,
        "fields": [_field(change, fc) for fc in change.fields],
    }


def _env(env: EnvReport) -> dict[str, Any]:
    return {
        "name": env.name,
        "counts": {a: env.count(a) for a in ("added", "removed", "changed")},
        "summary": None if env.summary is None else _summary(env.summary),
        "summaryNote": env.note,
        "objects": [_object(c) for c in env.changes],
    }


def render(report: Report) -> str:
    doc = {
        "schemaVersion": SCHEMA_VERSION,
        "base": {"ref": report.base.label, "commit": report.base.commit},
        "changed": report.changed,
        "environments": [_env(e) for e in report.envs],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"
