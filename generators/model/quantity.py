"""Kubernetes resource quantities: parse spec strings, print the canonical form.

Kueue stores quotas as resource.Quantity; the API server re-serialises every quantity in
its canonical form ("2k", not "2000"; "1Ti", not "1024Gi"). If we emit anything else,
Argo CD shows the ClusterQueue OutOfSync forever. So every quantity we render goes through
`canonical()`, which mirrors apimachinery's Quantity.String() for the integer values we
produce (quotas are whole units by construction, see generators/model/quota.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

Format = Literal["decimal", "binary"]

_BINARY = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(r"^(?P<num>[0-9]+(?:\.[0-9]+)?)(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$")


class QuantityError(ValueError):
    """A string that is not a (non-negative) Kubernetes quantity we accept."""


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity in base units (bytes, cores, devices) and the format it was written in."""

    value: Fraction
    format: Format


def parse(text: str | int | float) -> Quantity:
    """Parse `text` ("192", "1.5", "500m", "2Ti", 8). Exponent forms are refused on purpose:
    nobody writes node memory as 2e12, and accepting them only invites YAML 1.1 surprises."""
    raw = str(text).strip()
    match = _QUANTITY.match(raw)
    if match is None:
        raise QuantityError(f"{raw!r} is not a quantity (examples: 8, 192, 500m, 2Ti, 1536Gi)")
    number = Fraction(match["num"])
    suffix = match["suffix"]
    if suffix in _BINARY:
        return Quantity(number * _BINARY[suffix], "binary")
    return Quantity(number * _DECIMAL[suffix], "decimal")


def canonical(value: Fraction | int, fmt: Format) -> str:
    """Canonical string of a non-negative quantity, as the API server would print it.

    Binary: the largest power-of-1024 suffix that keeps an integer mantissa; values that are
    not a whole number of Ki fall back to decimal, as apimachinery does. Decimal: the largest
    power-of-1000 suffix (down to milli) that keeps an integer mantissa.
    """
    value = Fraction(value)
    if value < 0:
        raise QuantityError(f"negative quantity {value}")
    if value == 0:
        return "0"
    if fmt == "binary" and value.denominator == 1 and value.numerator % 1024 == 0:
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            unit = _BINARY[suffix]
            if value.numerator % unit == 0:
                return f"{value.numerator // unit}{suffix}"
    for suffix in ("E", "P", "T", "G", "M", "k", "", "m", "u", "n"):
        scaled = value / _DECIMAL[suffix]
        if scaled.denominator == 1:
            mantissa = scaled.numerator
            # apimachinery never prints a mantissa divisible by 1000 with a smaller suffix
            return f"{mantissa}{suffix}"
    raise QuantityError(f"{value} is finer than a nano-unit")
