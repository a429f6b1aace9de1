"""generators/promql/reads.py: what an expression reads, from its syntax tree."""

from __future__ import annotations

import pytest

from generators.promql.reads import Matcher, concrete, label_uses, selectors


def needs(expr: str) -> set[tuple[str, str]]:
    return {(u.selector.name, u.label) for u in label_uses(expr)}


def test_selectors_ignore_metric_names_inside_strings() -> None:
    found = selectors('label_replace(a{job="x"}, "dst", "b_total", "src", "(.*)")')
    assert [(s.name, s.matchers) for s in found] == [("a", (Matcher("job", "=", "x"),))]


def test_labels_a_label_replace_creates_are_not_asked_of_its_input() -> None:
    assert needs('max by (node) (label_replace(a, "node", "$1", "Hostname", "(.*)"))') == {("a", "Hostname")}


def test_result_labels_follow_the_side_promql_takes_them_from() -> None:
    assert needs("sum by (n) (a * on (p) group_left (n) b)") == {
        ("a", "n"),
        ("a", "p"),
        ("b", "p"),
        ("b", "n"),
    }
    assert needs("sum by (n) (a * on (p) group_left () b)") == {("a", "n"), ("a", "p"), ("b", "p")}
    assert needs("sum by (n) (a and on (p) b)") == {("a", "n"), ("a", "p"), ("b", "p")}
    assert needs("sum by (n) (a or b)") == {("a", "n"), ("b", "n")}
    assert needs("sum by (n) (max by (m) (a))") == {("a", "m")}  # n is gone below: not asked
    assert needs("count(a) by (n)") == {("a", "n")}


def test_grafana_macros_and_variables_become_promql() -> None:
    assert concrete('rate(a{h=~"$host"}[$__rate_interval])') == 'rate(a{h=~".*"}[5m])'
    assert concrete('label_replace(a, "n", "$1", "h", "(.*)")') == 'label_replace(a, "n", "$1", "h", "(.*)")'


def test_not_promql_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        selectors("sum by (")
