"""Per-node quantities of a pool: what a Kubernetes quantity is, whole units, plausible sizes.

A quantity the schema accepts can still be wrong by a factor of 2^30: `memory: 1800` is
1,800 BYTES, and quotas multiply it by every node, silently. So each pool's per-node
amounts are checked against plausibility bounds that live in the schema (`x-perNode`: unit,
min, max; the descriptions say the same for editors), unless the pool says
`exoticHardware: true`. Kubernetes' own limit is never lifted: a quantity is an int64 of
base units (Kueue compares CPU in millicores), so no pool total may pass 2^63-1.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import cache
from typing import Any

from generators.errors import Problem, format_path
from generators.model import quantity
from generators.spec.schema import root
from generators.spec.source import Document

INT64_MAX = 2**63 - 1  # resource.Quantity.Value() and MilliValue() are int64


@cache
def _bounds_schema() -> dict[str, dict[str, Any]]:
    """`x-perNode` of each per-node field of a pool, from the schema: the one place they live."""
    pool = root()["$defs"]["pool"]["properties"]
    return {
        "gpu": pool["gpu"]["properties"]["perNode"]["x-perNode"],
        "cpu": pool["cpu"]["x-perNode"],
        "memory": pool["memory"]["x-perNode"],
        "extra": pool["extraResources"]["additionalProperties"]["x-perNode"],
    }


def check(doc: Document, value: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    for i, pool in enumerate(value["pools"]):
        fields: list[tuple[tuple[str | int, ...], str, Any]] = [
            (("pools", i, "gpu", "perNode"), "gpu", pool["gpu"]["perNode"]),
            (("pools", i, "cpu"), "cpu", pool["cpu"]),
            (("pools", i, "memory"), "memory", pool["memory"]),
            *(
                (("pools", i, "extraResources", name), "extra", count)
                for name, count in sorted(pool["extraResources"].items())
            ),
        ]
        for path, kind, raw in fields:
            problem = _field(raw, kind, pool, path)
            if problem is not None:
                message, hint = problem
                problems.append(Problem(doc.locate(path), message, format_path(path), hint))
    return problems


def _field(raw: Any, kind: str, pool: dict[str, Any], path: tuple[str | int, ...]) -> tuple[str, str] | None:
    value = quantity.parse(raw).value
    bounds = _bounds_schema()[kind]
    unit = bounds["unit"]
    what = {"gpu": "GPUs", "cpu": "CPU", "memory": "memory", "extra": str(path[-1])}[kind]
    if kind == "memory" and value.denominator != 1:
        return (
            f"memory per node must be whole bytes: {raw} is {float(value):.1f} bytes",
            f"write {_whole_alternatives(str(raw))}",
        )
    if kind == "cpu" and (value * 1000).denominator != 1:
        return (
            f"CPU per node must be whole millicores: {raw} is {float(value * 1000)} millicores",
            f"write {round(value * 1000)}m",
        )
    if not pool.get("exoticHardware") and (problem := _implausible(raw, value, bounds, what)):
        return problem
    total = value * pool["nodes"] * (1000 if kind == "cpu" else 1)
    if total > INT64_MAX:
        base = "millicores" if kind == "cpu" else unit
        return (
            f"{pool['nodes']} nodes x {raw} is {float(total):.3e} {base}, past Kubernetes' limit "
            f"of 2^63-1 {base} per quantity",
            "the apiserver would cap the quota and Argo CD never sync; check the unit",
        )
    return None


def _implausible(raw: Any, value: Fraction, bounds: dict[str, Any], what: str) -> tuple[str, str] | None:
    unit = bounds["unit"]
    low, high = quantity.parse(bounds["min"]).value, quantity.parse(bounds["max"]).value
    if low <= value <= high:
        return None
    side = f"below {bounds['min']}" if value < low else f"above {bounds['max']}"
    shown = f"{raw} {unit}" if isinstance(raw, int) or str(raw).isdigit() else str(raw)
    span = f"{bounds['min']} to {bounds['max']}" + (f" {unit}" if bounds["max"].isdigit() else "")
    hint = f"plausible per node: {span}"
    fixes = _in_bounds(raw, low, high) if unit == "bytes" else []
    if fixes:
        hint = (
            f"{'a bare number counts bytes: ' if str(raw).isdigit() else ''}did you mean "
            f"{' or '.join(fixes)}? {hint}"
        )
    return (
        f"{what} per node is implausible: {shown}, {side}",
        f"{hint}; set exoticHardware: true on the pool for hardware outside these bounds",
    )


def _in_bounds(raw: Any, low: Fraction, high: Fraction) -> list[str]:
    """The same number with the binary and decimal suffix that puts it within bounds."""
    match = re.match(r"^([0-9]+(?:\.[0-9]+)?)", str(raw))
    if match is None:
        return []
    num = match[1]
    for binary, decimal in (("Gi", "G"), ("Ti", "T"), ("Mi", "M")):
        if all(low <= quantity.parse(num + s).value <= high for s in (binary, decimal)):
            return [f"{num}{binary}", f"{num}{decimal}"]
    return []


def _whole_alternatives(raw: str) -> str:
    """`1.8Ti` -> `1800G (decimal) or 1843Gi`: an exact decimal reading and a rounded binary one."""
    match = re.match(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[kMGTPEm]?)$", raw)
    if match is None:
        return "a whole number of bytes"
    value = quantity.parse(raw).value
    options = []
    suffix = match[2]
    if suffix.endswith("i"):
        decimal = quantity.parse(match[1] + suffix[0]).value
        options.append(f"{quantity.canonical(decimal, 'decimal')} (if you meant decimal units)")
    for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if value >= size * 10:
            options.append(f"{int(value // size)}Gi".replace("Gi", unit) + f" ({raw} rounded down)")
            break
    return " or ".join(options) or f"{int(value)} (bytes)"
