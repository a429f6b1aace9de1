"""Quantities print exactly as the API server re-serialises them (else Argo CD never syncs)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from generators.model.quantity import QuantityError, canonical, parse


@pytest.mark.parametrize(
    ("value", "fmt", "expected"),
    [
        (0, "decimal", "0"),
        (8, "decimal", "8"),
        (1024, "decimal", "1024"),
        (2000, "decimal", "2k"),
        (1500, "decimal", "1500"),
        (Fraction(1, 2), "decimal", "500m"),
        (Fraction(3, 2), "decimal", "1500m"),
        (3_000_000, "decimal", "3M"),
        (1 << 30, "binary", "1Gi"),
        (1024 * (1 << 30), "binary", "1Ti"),
        (1536 * (1 << 20), "binary", "1536Mi"),
        (90000 * (1 << 30), "binary", "90000Gi"),
        (1000, "binary", "1k"),  # not a multiple of 1024: apimachinery falls back to decimal
    ],
)
def test_canonical(value: int | Fraction, fmt: str, expected: str) -> None:
    assert canonical(value, fmt) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "value", "fmt"),
    [
        ("192", 192, "decimal"),
        ("500m", Fraction(1, 2), "decimal"),
        ("2Ti", 2 << 40, "binary"),
        ("1.5Gi", 3 << 29, "binary"),
        (8, 8, "decimal"),
    ],
)
def test_parse(text: str | int, value: int | Fraction, fmt: str) -> None:
    q = parse(text)
    assert (q.value, q.format) == (value, fmt)


@pytest.mark.parametrize("text", ["", "-1", "1e3", "12 Gi", "Gi", "1.5.2", "0x10"])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(QuantityError):
        parse(text)


def test_canonical_rejects_negative() -> None:
    with pytest.raises(QuantityError):
        canonical(-1, "decimal")
