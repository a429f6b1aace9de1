"""A test case that breaks a valid text by an edit (`old` replaced by `new`) and expects it
refused: a gate policy's (tests/gate/refusals.py), the rendered DeschedulerPolicy's
(tests/overflow/test_descheduler_policy.py)."""

from __future__ import annotations


def edited(text: str, old: str, new: str) -> str:
    """`text` with its first `old` replaced by `new`. `old` must be in `text`: a case whose
    `old` drifted away (the example or the rendered file changed) would test the unedited,
    valid text."""
    assert old in text, f"{old!r} is not in the text the case edits"
    return text.replace(old, new, 1)
