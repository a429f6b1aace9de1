"""generators.jsontext gives exactly json.dumps(sort_keys=True, indent=2, ensure_ascii=False)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generators.jsontext import dumps_sorted_indented

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(),
    st.sampled_from(["", '"', "\\", "\n", "\x00", "\x1f", "\x7f", "é°C", "\u2028", "\U0001f600", "{{x}}"]),
)
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.tuples(children, children),
        st.dictionaries(st.text(max_size=8), children, max_size=5),
    ),
    max_leaves=40,
)


def reference(value: Any) -> str:
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)


@settings(max_examples=600)
@given(documents)
def test_same_text_as_the_standard_library(value: Any) -> None:
    assert dumps_sorted_indented(value) == reference(value)


def test_shipped_dashboard_text_is_unchanged() -> None:
    """A real dashboard model, through both encoders."""
    from generators.components.monitoring import dashboards
    from generators.layout import environment_names
    from generators.model.load import load
    from tests.support import ROOT

    env = load(ROOT, environment_names(ROOT)[0])
    for _, build in dashboards.builders(env):
        dashboard = build(env)
        assert dumps_sorted_indented(dashboard) == reference(dashboard)


def test_other_key_types_fall_back_to_the_standard_library() -> None:
    value = {"k": {2: "b", 1: {True: None}}}
    assert dumps_sorted_indented(value) == reference(value)
    with pytest.raises(TypeError):  # mixed key types cannot be sorted, by either encoder
        dumps_sorted_indented({1: "a", "b": 2})
