"""The dcgm-exporter counters CSV is readable by dcgm-exporter.

dcgm-exporter reads it with Go's encoding/csv (Comment '#', all records as many fields as the
first, bare quotes refused) and exits unless every record, trimmed of spaces, has exactly
three fields with a Prometheus type it knows (NVIDIA/dcgm-exporter
internal/pkg/counters/counter_config.go `ReadCSVFile`, `ExtractCounters`; variables.go
`promMetricType`). A ConfigMap that breaks this takes every DCGM panel and alert down with it.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator

from generators.components.monitoring.dcgm_counters import CSV_KEY, PROM_TYPES
from policies.context import Context, Finding

ID = "dcgm-counters"
RATIONALE = (
    "dcgm-exporter exits on a counters CSV it cannot parse, and with it every DCGM panel "
    "and alert goes dark while only ExporterDown fires"
)
SEVERITY = "error"


def check(ctx: Context) -> Iterable[Finding]:
    for item in ctx.of_kind("ConfigMap"):
        data = item.obj.get("data") or {}
        text = data.get(CSV_KEY) if isinstance(data, dict) else None
        if isinstance(text, str):
            yield from (item.finding(f"data[{CSV_KEY}] {m}") for m in problems(text))


def problems(text: str) -> Iterator[str]:
    """What dcgm-exporter would refuse, one message per offending line (1-based)."""
    width: int | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        if '"' in line:
            yield f"line {number}: a quote; dcgm-exporter's reader refuses quotes in these fields"
            continue
        fields = [f.strip(" ") for f in next(csv.reader([line]))]
        width = len(fields) if width is None else width
        if len(fields) != 3:
            yield (
                f"line {number}: {len(fields)} fields ({line.strip()!r}), dcgm-exporter needs exactly 3: "
                "FIELD, type, help (no commas in the help text)"
            )
        elif len(fields) != width:
            yield f"line {number}: {len(fields)} fields where the first record had {width}"
        elif fields[1] not in PROM_TYPES:
            yield f"line {number}: type {fields[1]!r} is not one of {', '.join(sorted(PROM_TYPES))}"
