"""A template's output parsed once per shape and filled with values gives exactly the objects
that parsing its classic text gives (generators/speedups/templateshapes.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from generators.layout import environment_names
from generators.model.load import load
from generators.output import templating
from generators.output.templating import to_flow
from generators.pipeline import render
from generators.speedups import templateshapes
from tests.speedups.objects import same
from tests.support import ROOT
from tests.support.examples import examples


def classic(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the `y` filter emit YAML text, as before shapes existed."""
    monkeypatch.setattr(templateshapes, "token", lambda value: None)


@pytest.mark.parametrize("name", environment_names(ROOT))
def test_shipped_environments_render_the_same_objects_both_ways(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = load(ROOT, name)
    misses = sum(templateshapes.misses.values())
    shaped = render.render_environment(env)
    assert sum(templateshapes.misses.values()) == misses, "every shipped template renders through its shape"
    with monkeypatch.context() as patch:
        classic(patch)
        plain = render.render_environment(load(ROOT, name))
    assert [f.path for f in shaped] == [f.path for f in plain]
    for a, b in zip(shaped, plain, strict=True):
        assert a.text == b.text, a.path
        assert same(a.obj, b.obj), a.path


def fill(text_with_values: str, *values: Any) -> Any:
    """`{}` in the text stands for the next value, as the `y` filter would write it."""
    with templateshapes.recording() as recorded:
        tokens = [templateshapes.token(v) for v in values]
    return templateshapes.fill(text_with_values.format(*tokens), recorded)


def parse_classic(text_with_values: str, *values: Any) -> Any:
    return yaml.load(text_with_values.format(*(to_flow(v) for v in values)), Loader=yaml.CSafeLoader)


plain_data = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20)),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.tuples(children),
        st.dictionaries(st.one_of(st.text(max_size=5), st.integers(), st.booleans()), children, max_size=3),
    ),
    max_leaves=15,
)


@settings(max_examples=examples(300))
@given(plain_data, plain_data)
def test_filled_values_equal_their_parsed_flow_text(a: Any, b: Any) -> None:
    text = "kind: X\nspec:\n  a: {}\n  list:\n  - {}\n  - literal\n"
    assert same(fill(text, a, b), parse_classic(text, a, b))


def test_a_token_as_a_mapping_key() -> None:
    text = "data:\n  {}: {}\n"
    assert same(fill(text, "k.json", "{}\n"), parse_classic(text, "k.json", "{}\n"))


def test_filled_objects_are_fresh_copies() -> None:
    labels = {"a": "b"}
    first = fill("labels: {}\n", labels)
    first["labels"]["c"] = "d"
    assert labels == {"a": "b"}
    assert fill("labels: {}\n", labels) == {"labels": {"a": "b"}}


@pytest.mark.parametrize(
    "text",
    [
        "a: x{}\n",  # inside a longer plain scalar
        "a: |\n  {}\n",  # inside a block literal
        "a: 1\n# {}\n",  # in a comment: dropped
        "a: &x {}\nb: *x\n",  # used twice through an alias
        "a: !!str {}\n",  # a tag changes what the value becomes
        "a: [\n",  # not YAML: the classic text reports it
    ],
)
def test_texts_that_cannot_be_filled_fall_back(text: str) -> None:
    with pytest.raises(templateshapes.NoShape):
        fill(text, 5)


@pytest.mark.parametrize("value", [Path("x"), {"a": frozenset()}, {("t",): 1}, b"bytes"])
def test_values_that_are_not_plain_data_fall_back(value: Any) -> None:
    with templateshapes.recording(), pytest.raises(templateshapes.NoShape):
        templateshapes.token(value)


def test_no_recording_no_token() -> None:
    assert templateshapes.token("x") is None


@pytest.fixture
def shapes_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The layer on whatever the caller's TRAINYARD_SPEEDUPS says; no shape parsed by an
    earlier test is reused."""
    monkeypatch.delenv("TRAINYARD_SPEEDUPS", raising=False)
    templateshapes._skeleton.cache_clear()
    yield
    templateshapes._skeleton.cache_clear()


def test_switched_off_templates_render_their_classic_text(
    shapes_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    shaped = render.render_environment(load(ROOT, "dev"))
    monkeypatch.setenv("TRAINYARD_SPEEDUPS", "0")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a shape was used although the layer is off")

    monkeypatch.setattr(templateshapes, "recording", refuse)
    plain = render.render_environment(load(ROOT, "dev"))
    assert [(f.path, f.text) for f in plain] == [(f.path, f.text) for f in shaped]


@pytest.mark.parametrize("text", ["- {{ 1 | y }}\n", "{{ 'a' | y }}\n", "# nothing\n"])
def test_render_gives_a_mapping_or_says_what_the_template_gave(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """templating.render() is typed dict[str, Any]: a template giving anything else is refused
    by name, through the shape and the classic path alike."""
    env = templating.environment()
    loader = jinja2.DictLoader({"t.yaml.j2": text, "ok.yaml.j2": "a: {{ [1] | y }}\n"})
    monkeypatch.setattr(env, "loader", loader)
    monkeypatch.setattr(env, "cache", {})
    monkeypatch.setattr(env, "bytecode_cache", None)  # no entries for these in the user's cache
    assert templating.render("ok.yaml.j2") == {"a": [1]}
    for patch in (None, classic):
        if patch is not None:
            patch(monkeypatch)
        with pytest.raises(TypeError, match=r"template t\.yaml\.j2 rendered \w+, not a mapping"):
            templating.render("t.yaml.j2")
