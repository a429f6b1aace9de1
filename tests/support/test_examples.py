"""examples(): a property test's own count under Hypothesis's default profile, a quarter of it
under `make test-fast`'s "edit-loop" profile (registered in tests/conftest.py)."""

from __future__ import annotations

import pytest
from hypothesis import settings

from tests.support.examples import examples


@pytest.mark.parametrize(
    ("profile", "full", "drawn"),
    [
        ("default", 60, 60),
        ("edit-loop", 60, 15),
        ("edit-loop", 1000, 250),
        ("edit-loop", 12, 10),  # never under the floor of 10 ...
        ("edit-loop", 5, 5),  # ... nor over the test's own count
    ],
)
def test_counts_follow_the_loaded_profile(profile: str, full: int, drawn: int) -> None:
    active = settings.get_current_profile_name()
    try:
        settings.load_profile(profile)
        assert examples(full) == drawn
    finally:
        settings.load_profile(active)
