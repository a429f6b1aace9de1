"""How many examples a property test draws: its own count in the whole suite, a quarter of it
in the edit loop.

`make test-fast` loads Hypothesis's profile "edit-loop" (registered in tests/conftest.py) whose
max_examples is a quarter of Hypothesis's default of 100. An explicit `@settings(max_examples=N)`
would ignore any profile, so the property tests write `max_examples=examples(N)` and scale with
it: every property still runs in the loop, on fewer draws (the quota property renders an
environment per draw: 60 draws took 14 s of the loop's 110). `make test` and CI draw N.
"""

from __future__ import annotations

from hypothesis import settings

HYPOTHESIS_DEFAULT = 100  # Hypothesis's own max_examples when no profile changes it
EDIT_LOOP_EXAMPLES = 25
FLOOR = 10  # fewer draws than this rarely reach an edge case at all


def examples(full: int) -> int:
    """`full` under the default profile; scaled by the loaded profile's max_examples."""
    loaded = settings.default  # None only while Hypothesis itself is being imported
    per_hundred = HYPOTHESIS_DEFAULT if loaded is None else loaded.max_examples
    return max(min(full, FLOOR), full * per_hundred // HYPOTHESIS_DEFAULT)
