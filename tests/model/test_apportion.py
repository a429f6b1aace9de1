"""Largest remainder: parts always sum to the total, deterministically."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from generators.model.apportion import largest_remainder


@given(st.integers(0, 10**6), st.lists(st.integers(0, 100), min_size=1, max_size=40))
def test_parts_sum_to_total_and_stay_close(total: int, weights: list[int]) -> None:
    parts = largest_remainder(total, weights)
    assert len(parts) == len(weights)
    if sum(weights) == 0:
        assert parts == [0] * len(weights)
        return
    assert sum(parts) == total
    for part, weight in zip(parts, weights, strict=True):
        exact = total * weight / sum(weights)
        assert exact - 1 < part < exact + 1  # never more than one unit off its exact share
        if weight == 0:
            assert part == 0


def test_known_split() -> None:
    # 248 nodes, shares 50/20/15/10/5 -> 124, 49.6, 37.2, 24.8, 12.4
    assert largest_remainder(248, [50, 20, 15, 10, 5]) == [124, 50, 37, 25, 12]


def test_ties_go_to_earlier_positions() -> None:
    assert largest_remainder(1, [50, 50]) == [1, 0]
    assert largest_remainder(2, [1, 1, 1]) == [1, 1, 0]
