"""The guard on sync-inventory's splice (generators/inventory/edit.py): the edited text must
mean the original with only the pools' counts changed, or nothing is written.

The splice itself is right today, so no node list reaches the guard through the command
(tests/workflow/test_sync_edit.py runs that); here it is handed wrong edits directly, each
the outcome of a plausible splice bug.
"""

from __future__ import annotations

import pytest

from generators.inventory.edit import EditRefused, _prove

ORIGINAL = """pools:
  - name: serve
    nodes: 16   # synced
    cpu: 96
  - name: train
    nodes: 8
    cpu: 96
"""
REFUSED = (
    "environments/x.yaml: error: replacing the node counts would change more than them; edit nodes: by hand"
)


def test_the_right_edit_passes() -> None:
    _prove(ORIGINAL, ORIGINAL.replace("nodes: 8", "nodes: 12"), {"train": 12}, "environments/x.yaml")


BOTH = {"serve": 9, "train": 12}
TRAIN = {"train": 12}


@pytest.mark.parametrize(
    ("edited", "counts"),
    [
        # front to back: serve's 16 -> 9 moved train's 8 one place left, so its old span
        # (the 8) now holds the line break, replaced by 12: the text no longer parses
        (ORIGINAL.replace("nodes: 16", "nodes: 9").replace("nodes: 8\n    cpu", "nodes: 812    cpu"), BOTH),
        # the right span, but another number changed too
        (ORIGINAL.replace("nodes: 8", "nodes: 12").replace("cpu: 96\n", "cpu: 12\n", 1), TRAIN),
        # the count written into the wrong pool
        (ORIGINAL.replace("nodes: 16", "nodes: 12"), TRAIN),
        # a key changed beside the count
        (ORIGINAL.replace("nodes: 8", "nodes: 12").replace("name: train", "name: trains"), TRAIN),
    ],
    ids=["shifted-unparsable", "another-number", "wrong-pool", "another-key"],
)
def test_an_edit_that_changes_more_than_the_counts_is_refused(edited: str, counts: dict[str, int]) -> None:
    """Refused with the one-line error, never a traceback (an edit that no longer parses
    escaped as yaml.ScannerError until the guard caught it)."""
    with pytest.raises(EditRefused) as refused:
        _prove(ORIGINAL, edited, counts, "environments/x.yaml")
    assert str(refused.value) == REFUSED
