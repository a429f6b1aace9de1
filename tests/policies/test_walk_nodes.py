"""policies.walk.nodes (an explicit stack) yields what the recursive definition yields."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from policies.walk import Path, nodes
from tests.support.examples import examples


def recursive(value: Any, path: Path = ()) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    if isinstance(value, Mapping):
        yield path, value
        for key, child in value.items():
            yield from recursive(child, (*path, str(key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from recursive(child, (*path, index))


trees = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=3)),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(st.one_of(st.text(max_size=3), st.integers()), children, max_size=4),
        st.dictionaries(st.text(max_size=3), children, max_size=2).map(MappingProxyType),
    ),
    max_leaves=30,
)


@settings(max_examples=examples(500))
@given(trees)
def test_same_nodes_in_the_same_order(value: Any) -> None:
    got, want = list(nodes(value)), list(recursive(value))
    assert [path for path, _ in got] == [path for path, _ in want]
    assert all(a is b for (_, a), (_, b) in zip(got, want, strict=True))
