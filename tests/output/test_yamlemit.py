"""The emitter's output re-loads to the same object under PyYAML's safe loader (YAML 1.1,
as Kubernetes tooling reads it), and is byte-stable."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from generators.output.yamlemit import dump, scalar
from tests.support.examples import examples

TRICKY = [
    "yes",
    "no",
    "on",
    "off",
    "y",
    "n",
    "Yes",
    "NO",
    "true",
    "False",
    "null",
    "Null",
    "~",
    "",
    " ",
    "0755",
    "0o17",
    "0x1F",
    "1e3",
    "1E3",
    "1_000",
    "1:20",
    "1.0",
    ".5",
    "-1",
    "+1",
    ".inf",
    "-.Inf",
    ".nan",
    "=",
    "<<",
    ":",
    "- x",
    "? x",
    "a: b",
    "a #b",
    "#x",
    "@x",
    "`x",
    "!x",
    "&x",
    "*x",
    "|",
    ">",
    "%x",
    "'quoted'",
    '"dq"',
    "{a}",
    "[a]",
    "a,b",
    "tab\there",
    "multi\nline",
    "multi\nline\n",
    "trailing\n\n",
    " leading",
    "trailing ",
    "unicode °C é",
    "line\u2028sep",
    "nul\x00",
    "2026-11-29",
    "1.36.2",
    "960Gi",
    "500m",
    "2k",
    "v1",
    "nvidia.com/gpu",
    "kubernetes.io/metadata.name",
]


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_strings_round_trip(text: str) -> None:
    obj = {"key": text, text: [text, {"nested": text}]}
    assert yaml.safe_load(dump(obj)) == obj


@pytest.mark.parametrize("text", ["yes", "on", "0755", "1e3", "null", "~", ":", "1.5", "8", ""])
def test_ambiguous_scalars_are_quoted(text: str) -> None:
    assert scalar(text).startswith('"')


def test_block_literal_for_multiline() -> None:
    assert dump({"csv": "a,b\nc,d\n"}) == "csv: |\n  a,b\n  c,d\n"


def test_block_scalars_at_every_depth_written_out() -> None:
    """Literal blocks under a key, in a list, in a list of mappings: each body indented one
    step under its key or dash, `|` keeping the one final newline and `|-` for none, an
    empty line left empty (no indentation spaces), a more-indented line kept as written.
    The expected text is typed here, not produced by a YAML library."""
    value = {
        "a": {"b": ["x\ny\n", "p\n\nq"], "c": [{"d": "one\n  two\n"}]},
        "top": "L1\n\nL3",
    }
    assert dump(value) == (
        "a:\n"
        "  b:\n"
        "  - |\n"
        "    x\n"
        "    y\n"
        "  - |-\n"
        "    p\n"
        "\n"
        "    q\n"
        "  c:\n"
        "  - d: |\n"
        "      one\n"
        "        two\n"
        "top: |-\n"
        "  L1\n"
        "\n"
        "  L3\n"
    )
    assert yaml.safe_load(dump(value)) == value


@pytest.mark.parametrize("text", [" lead\nx", "  two\nx\n", " \nx"])
def test_a_first_line_starting_with_a_blank_is_never_a_literal_block(text: str) -> None:
    """A literal block takes its indentation from its first line: a leading blank would
    indent the rest less than the first line. Such strings are double-quoted."""
    assert dump({"k": text}).startswith('k: "')
    assert yaml.safe_load(dump({"k": [text, {"n": text}]})) == {"k": [text, {"n": text}]}


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63),
    st.floats(allow_nan=False, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(TRICKY),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=10), st.sampled_from(TRICKY)), children, max_size=4),
    ),
    max_leaves=25,
)


@settings(max_examples=examples(400))
@given(values)
def test_any_data_round_trips(value: Any) -> None:
    text = dump(value)
    assert yaml.load(text, Loader=yaml.CSafeLoader) == value
    assert dump(value) == text


multiline = st.text(alphabet=st.sampled_from(["a", "b", " ", "\n", "#", ":", "-"]), min_size=2, max_size=16)


@settings(max_examples=examples(400))
@given(
    st.recursive(
        st.one_of(multiline, scalars),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text("kv", max_size=2), c, max_size=3),
        max_leaves=8,
    )
)
def test_no_emitted_line_ends_in_a_blank(value: Any) -> None:
    """Trailing blanks are invisible in review and stripped by editors (which would change a
    literal block's text): the emitter never writes one, in a block scalar's empty lines
    either, and every multi-line string still reads back exactly."""
    text = dump(value)
    assert [line for line in text.split("\n") if line != line.rstrip(" \t")] == []
    assert yaml.load(text, Loader=yaml.CSafeLoader) == value


@settings(max_examples=examples(200))
@given(values)
def test_template_flow_filter_round_trips(value: Any) -> None:
    """The `y` filter puts data into templates; parsed back it must be the same data."""
    from generators.output.templating import to_flow

    assert yaml.load(f"v: {to_flow(value)}\n", Loader=yaml.CSafeLoader) == {"v": value}


@settings(max_examples=examples(500))
@given(st.one_of(st.text(), st.sampled_from(TRICKY), st.text(alphabet=st.characters(codec="utf-8"))))
def test_double_quoted_fast_path_matches_per_character_escaping(text: str) -> None:
    """double_quoted() escapes in C when it can; the bytes must be the per-character ones."""
    from generators.output.yamlemit import _double_quoted_by_char, double_quoted

    assert double_quoted(text) == _double_quoted_by_char(text)
    assert yaml.load(f"v: {double_quoted(text)}\n", Loader=yaml.CSafeLoader) == {"v": text}


def _literal_ok_by_line(text: str) -> bool:
    """The oracle: generators.output.yamlemit._literal_ok's rule line by line, as first written."""
    if "\n" not in text or "\r" in text or text.startswith((" ", "\n")):
        return False
    body = text[:-1] if text.endswith("\n") else text
    if body.endswith("\n"):
        return False
    return all(
        line == "" or (line.isprintable() and not line.isspace() and line.rstrip(" ") == line)
        for line in body.split("\n")
    )


@settings(max_examples=examples(1000))
@given(
    st.one_of(
        st.text(
            alphabet=st.sampled_from(["a", " ", "\n", "\t", "\r", "\u3000", "\u00a0", "\x85", "é", "\x00"]),
            max_size=12,
        ),
        st.text(max_size=20),
    )
)
def test_literal_block_rule_matches_the_line_by_line_rule(text: str) -> None:
    from generators.output.yamlemit import _literal_ok

    assert _literal_ok(text) == _literal_ok_by_line(text)
