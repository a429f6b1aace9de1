"""The field diff of lists keyed by name (generators/diff/fields.py), against a separate oracle.

The review workflow's test (tests/workflow/test_diff_list_items.py) shows one inserted pool
end to end; here every case is a literal worked out by hand, and a property test compares
the engine with a small oracle built from set arithmetic over the names (which names went,
which came, which stayed with another value, whether the kept ones changed order), never
from the engine's own walk.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from generators.diff.fields import MISSING, changed_fields, format_path
from tests.support.examples import examples


def shown(before: Any, after: Any) -> list[tuple[str, Any, Any]]:
    return [(format_path(c.path), c.before, c.after) for c in changed_fields(before, after)]


def flavors(*items: tuple[str, int]) -> dict[str, Any]:
    return {"flavors": [{"name": name, "quota": quota} for name, quota in items]}


def test_a_removed_item_is_reported_removed_at_its_old_index() -> None:
    # b (index 1 before) goes; a and c stay with their values: one removal, nothing else
    before = flavors(("a", 8), ("b", 16), ("c", 24))
    after = flavors(("a", 8), ("c", 24))
    assert shown(before, after) == [("flavors[1]", {"name": "b", "quota": 16}, MISSING)]


def test_removed_and_added_in_one_list() -> None:
    # b goes (old index 1), d comes (new index 2); a keeps 8, c's quota 24 -> 32 at new index 1
    before = flavors(("a", 8), ("b", 16), ("c", 24))
    after = flavors(("a", 8), ("c", 32), ("d", 4))
    assert shown(before, after) == [
        ("flavors[1]", {"name": "b", "quota": 16}, MISSING),
        ("flavors[1].quota", 24, 32),
        ("flavors[2]", MISSING, {"name": "d", "quota": 4}),
    ]


def test_a_kept_item_is_compared_with_the_item_of_its_name() -> None:
    # z inserted first: a and b move down one index; only b's quota changed (2 -> 3)
    before = flavors(("a", 1), ("b", 2))
    after = flavors(("z", 9), ("a", 1), ("b", 3))
    assert shown(before, after) == [
        ("flavors[0]", MISSING, {"name": "z", "quota": 9}),
        ("flavors[2].quota", 2, 3),
    ]


def test_order_alone_is_one_change_listing_the_names() -> None:
    before = flavors(("a", 1), ("b", 2), ("c", 3))
    after = flavors(("c", 3), ("a", 1), ("b", 2))
    assert shown(before, after) == [
        ("flavors", ["name=a", "name=b", "name=c"], ["name=c", "name=a", "name=b"])
    ]


def test_a_repeated_name_is_compared_by_index() -> None:
    # two items named x: no natural key is unique, so index 0 is compared with index 0
    before = {"l": [{"name": "x", "v": 1}, {"name": "x", "v": 2}]}
    after = {"l": [{"name": "x", "v": 2}]}
    assert shown(before, after) == [("l[0].v", 1, 2), ("l[1]", {"name": "x", "v": 2}, MISSING)]


def test_a_value_changing_type_is_a_change() -> None:
    # 1 == True == 1.0 in Python, not in the YAML a reader gets: each is a change
    assert shown({"a": 1, "b": 1, "c": 0}, {"a": True, "b": 1.0, "c": False}) == [
        ("a", 1, True),
        ("b", 1, 1.0),
        ("c", 0, False),
    ]
    assert shown({"a": 1, "b": "x"}, {"a": 1, "b": "x"}) == []


NAMES = st.lists(st.sampled_from("abcdefg"), unique=True, max_size=6)
QUOTAS = st.integers(0, 3)


@st.composite
def keyed_lists(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    before = [{"name": n, "quota": draw(QUOTAS)} for n in draw(NAMES)]
    after = [{"name": n, "quota": draw(QUOTAS)} for n in draw(NAMES)]
    return before, after


@settings(max_examples=examples(300))
@given(keyed_lists())
def test_keyed_lists_match_the_set_oracle(lists: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    before, after = lists
    old = {item["name"]: (i, item) for i, item in enumerate(before)}
    new = {item["name"]: (i, item) for i, item in enumerate(after)}
    kept_in_old_order = [item["name"] for item in before if item["name"] in new]
    kept_in_new_order = [item["name"] for item in after if item["name"] in old]
    Shown = tuple[str, object, object]  # (path, before, after), lists as tuples, else repr
    expected: set[Shown] = set()
    if kept_in_old_order != kept_in_new_order:
        expected.add(
            (
                "l",
                tuple(f"name={n}" for n in kept_in_old_order),
                tuple(f"name={n}" for n in kept_in_new_order),
            )
        )
    expected |= {(f"l[{i}]", repr(item), repr(MISSING)) for n, (i, item) in old.items() if n not in new}
    expected |= {(f"l[{i}]", repr(MISSING), repr(item)) for n, (i, item) in new.items() if n not in old}
    expected |= {
        (f"l[{i}].quota", repr(old[n][1]["quota"]), repr(item["quota"]))
        for n, (i, item) in new.items()
        if n in old and old[n][1]["quota"] != item["quota"]
    }
    got = [
        (path, tuple(b) if isinstance(b, list) else repr(b), tuple(a) if isinstance(a, list) else repr(a))
        for path, b, a in shown({"l": before}, {"l": after})
    ]
    assert len(got) == len(set(got))
    assert set(got) == expected
