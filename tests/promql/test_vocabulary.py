"""generators/promql/vocabulary.py: the words every rendered query is written with. Expected
strings are literals: PromQL's string syntax (Go's escapes), RE2 alternations, and the label
names kube-state-metrics writes (internal/store/utils.go labelName: sanitise, snake-case,
lower-case)."""

from __future__ import annotations

import pytest

from generators.promql.reads import Matcher, selectors
from generators.promql.vocabulary import (
    ksm_label,
    ksm_resource,
    labelled_union,
    match_any,
    match_none,
    num,
    quote,
    selector,
    target_down,
    to_node,
    with_label,
)


def test_quote_escapes_backslash_and_double_quote() -> None:
    assert quote('a"b\\c') == '"a\\"b\\\\c"'


def test_selector_drops_empty_matchers() -> None:
    assert selector('job="x"', "", 'node="n"') == '{job="x", node="n"}'


@pytest.mark.parametrize(
    ("values", "any_of", "none_of"),
    [
        (["a", "a"], 'node="a"', 'node!="a"'),
        # sorted, de-duplicated, regex metacharacters escaped, the backslash then quoted
        (["b.x", "a", "b.x"], 'node=~"a|b\\\\.x"', 'node!~"a|b\\\\.x"'),
    ],
)
def test_matchers_of_one_and_of_several_values(values: list[str], any_of: str, none_of: str) -> None:
    assert match_any("node", values) == any_of
    assert match_none("node", values) == none_of


def test_an_alternation_matches_only_its_literal_values() -> None:
    # The real parser (promql_parser, through reads.py) reads the matcher back.
    (found,) = selectors("up" + selector(match_any("node", ["b.x", "a"])))
    assert found.matchers == (Matcher("node", "=~", "a|b\\.x"),)


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("nvidia.com/gpu.product", "label_nvidia_com_gpu_product"),
        ("node.kubernetes.io/instanceType", "label_node_kubernetes_io_instance_type"),
        ("pool", "label_pool"),
    ],
)
def test_ksm_label(key: str, label: str) -> None:
    assert ksm_label(key) == label


def test_ksm_resource() -> None:
    assert ksm_resource("nvidia.com/gpu") == "nvidia_com_gpu"


def test_num_prints_integers_without_a_point() -> None:
    assert [num(78), num(78.0), num(0.05)] == ["78", "78", "0.05"]


def test_per_node_and_constant_labels() -> None:
    assert to_node("up", "Hostname") == 'max by (node) (label_replace(up, "node", "$1", "Hostname", "(.*)"))'
    assert with_label("up", "provider", "mock") == 'label_replace(up, "provider", "mock", "", "")'
    assert labelled_union("counter", {"a": "x", "b": "y"}) == (
        'label_replace(x, "counter", "a", "", "") or label_replace(y, "counter", "b", "", "")'
    )


def test_target_down_is_failing_or_gone() -> None:
    assert target_down('up{job="gate"}') == '(up{job="gate"} == 0) or absent(up{job="gate"})'
