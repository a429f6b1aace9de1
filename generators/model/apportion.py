"""Largest-remainder apportionment: split an integer total by integer weights, exactly.

This is what makes quotas conserve capacity: the parts always sum to the total, so the
ClusterQueues of a pool can never promise more (or fewer) GPUs than the pool has.
"""

from __future__ import annotations

from collections.abc import Sequence


def largest_remainder(total: int, weights: Sequence[int]) -> list[int]:
    """Split `total` into len(weights) non-negative integers proportional to `weights`.

    Each part gets floor(total * w / W); the leftover units go one each to the parts with the
    largest remainders, ties broken by position (callers pass a stable order, e.g. by name),
    so the result is deterministic. sum(result) == total whenever sum(weights) > 0.
    """
    if total < 0 or any(w < 0 for w in weights):
        raise ValueError("total and weights must be non-negative")
    weight_sum = sum(weights)
    if weight_sum == 0:
        return [0] * len(weights)
    quotients = [divmod(total * w, weight_sum) for w in weights]
    parts = [q for q, _ in quotients]
    leftover = total - sum(parts)
    order = sorted(range(len(weights)), key=lambda i: (-quotients[i][1], i))
    for i in order[:leftover]:
        parts[i] += 1
    return parts
