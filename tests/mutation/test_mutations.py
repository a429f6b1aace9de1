"""The kept mutation list matches the code: each `old` text occurs exactly once in its file,
names are unique, and each mutation changes its file. (The mutation run itself ignores this
folder: under a mutation this test would fail and count as a kill.)"""

from __future__ import annotations

from tests.mutation.mutations import MUTATIONS
from tests.mutation.run import RENDERS
from tests.support import ROOT


def test_every_mutation_applies_exactly_once() -> None:
    assert len({m.name for m in MUTATIONS}) == len(MUTATIONS)
    for m in MUTATIONS:
        text = (ROOT / m.path).read_text(encoding="utf-8")
        assert text.count(m.old) == 1, f"{m.name}: {m.old!r} occurs {text.count(m.old)} times in {m.path}"
        assert m.old != m.new, m.name


def test_the_list_covers_every_area_issue_25_names() -> None:
    areas = {
        m.path.split("/")[0] + ("/" + m.path.split("/")[1] if m.path.startswith("generators/") else "")
        for m in MUTATIONS
    }
    assert {"generators/model", "generators/components", "templates", "gate", "policies"} <= areas, areas
    assert len(MUTATIONS) >= 40
    assert any(m.path.startswith(RENDERS) for m in MUTATIONS)
