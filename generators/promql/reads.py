"""What a PromQL expression reads: the series it selects and the labels it needs on them.

Parsed with promql-parser (the Rust parser of GreptimeDB's promql-parser crate, which follows
Prometheus' grammar), never with regular expressions: a metric name inside a string, a
label created by label_replace, or a `by` clause above a join are told apart by the tree.
The installer values (does the checkpoint query read node_mountstats?) and `doctor` (every
metric and label the dashboards, rules and the gate query rely on) read expressions here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import promql_parser

# Grafana's variables and macros, replaced by values PromQL accepts before parsing.
GRAFANA_SUBSTITUTIONS = (
    ("$__rate_interval", "5m"),
    ("$__range_s", "3600"),
    ("$__range", "1h"),
    ("$__interval", "1m"),
)
_GRAFANA_VARIABLE = ".*"  # $host, $namespace, $cluster_queue: every value


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str  # =, !=, =~, !~
    value: str

    def text(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace('"', '\\"')
        return f'{self.label}{self.op}"{escaped}"'


@dataclass(frozen=True)
class Selector:
    """A vector selector: metric name and matchers (the name is never a matcher here)."""

    name: str
    matchers: tuple[Matcher, ...]


@dataclass(frozen=True)
class LabelUse:
    """`label` must be on the series of `selector`: it is grouped, joined or matched on."""

    selector: Selector
    label: str


_OPS = {"Equal": "=", "NotEqual": "!=", "Re": "=~", "NotRe": "!~"}


def concrete(expr: str) -> str:
    """A dashboard expression with Grafana's macros and variables replaced."""
    for macro, value in GRAFANA_SUBSTITUTIONS:
        expr = expr.replace(macro, value)
    out, i = [], 0
    while i < len(expr):  # $name (not "$1" in label_replace replacements) -> .*
        if expr[i] == "$" and i + 1 < len(expr) and (expr[i + 1].isalpha() or expr[i + 1] == "_"):
            j = i + 1
            while j < len(expr) and (expr[j].isalnum() or expr[j] == "_"):
                j += 1
            out.append(_GRAFANA_VARIABLE)
            i = j
        else:
            out.append(expr[i])
            i += 1
    return "".join(out)


def parse(expr: str) -> Any:
    """The expression's tree; ValueError with the parser's message when it is not PromQL."""
    try:
        return promql_parser.parse(concrete(expr))
    except Exception as error:  # the extension raises a plain Exception subclass
        raise ValueError(str(error)) from None


def _selector(node: Any) -> Selector:
    matchers = []
    for m in node.matchers.matchers:
        if m.name == "__name__":
            continue
        matchers.append(Matcher(m.name, _OPS[str(m.op).rsplit(".", 1)[-1]], m.value))
    name = node.name or next((m.value for m in node.matchers.matchers if m.name == "__name__"), "")
    return Selector(name, tuple(matchers))


def _children(node: Any) -> list[Any]:
    kind = type(node).__name__
    if kind == "BinaryExpr":
        return [node.lhs, node.rhs]
    if kind == "AggregateExpr":
        return [node.expr] + ([node.param] if node.param is not None else [])
    if kind == "Call":
        return list(node.args)
    if kind in ("ParenExpr", "UnaryExpr", "SubqueryExpr"):
        return [node.expr]
    if kind == "MatrixSelector":
        return [node.vector_selector]
    return []


def _walk(node: Any) -> Iterator[Any]:
    yield node
    for child in _children(node):
        yield from _walk(child)


def selectors(expr: str) -> list[Selector]:
    """Every vector selector of the expression, in order."""
    return [_selector(n) for n in _walk(parse(expr)) if type(n).__name__ == "VectorSelector"]


def _needs(node: Any, labels: set[str]) -> Iterator[LabelUse]:
    """Selectors below `node` whose series must carry `labels` for the result to have them,
    following where PromQL takes a result's labels from."""
    if not labels:
        return
    kind = type(node).__name__
    if kind == "VectorSelector":
        selector = _selector(node)
        for label in sorted(labels):
            yield LabelUse(selector, label)
    elif kind == "MatrixSelector":
        yield from _needs(node.vector_selector, labels)
    elif kind in ("ParenExpr", "UnaryExpr", "SubqueryExpr"):
        yield from _needs(node.expr, labels)
    elif kind == "AggregateExpr":
        modifier = node.modifier
        if modifier is None:
            return  # sum(x): no labels survive
        if str(modifier.type).endswith(".By"):
            yield from _needs(node.expr, labels & set(modifier.labels))
        else:
            yield from _needs(node.expr, labels - set(modifier.labels))
    elif kind == "Call":
        name = node.func.name
        if name == "label_replace":
            yield from _needs(node.args[0], labels - {node.args[1].val})
        elif name not in ("absent", "absent_over_time", "vector", "scalar", "time"):
            for arg in node.args:
                if type(arg).__name__ in (
                    "VectorSelector",
                    "MatrixSelector",
                    "ParenExpr",
                    "AggregateExpr",
                    "BinaryExpr",
                    "Call",
                    "SubqueryExpr",
                    "UnaryExpr",
                ):
                    yield from _needs(arg, labels)
                    break  # the first expression argument carries the labels
    elif kind == "BinaryExpr":
        modifier = node.modifier
        card = str(modifier.card) if modifier is not None else ""
        group = set(modifier.group_labels or ()) if modifier is not None else set()
        if str(node.op) == "or":
            yield from _needs(node.lhs, labels)
            yield from _needs(node.rhs, labels)
        elif card.endswith("OneToMany"):
            yield from _needs(node.rhs, labels)
            yield from _needs(node.lhs, labels & group)
        else:  # and, unless, one-to-one and many-to-one: the left side's labels
            yield from _needs(node.lhs, labels)
            if card.endswith("ManyToOne"):
                yield from _needs(node.rhs, labels & group)


def label_uses(expr: str) -> list[LabelUse]:
    """Labels the expression groups by (`by`), joins on (`on`) or takes from a series
    (label_replace's source), attached to the selectors that must carry them. Labels a
    label_replace below creates are not asked of its input."""
    uses: list[LabelUse] = []
    for n in _walk(parse(expr)):
        kind = type(n).__name__
        if kind == "AggregateExpr" and n.modifier is not None and str(n.modifier.type).endswith(".By"):
            uses += _needs(n.expr, set(n.modifier.labels))
        elif kind == "BinaryExpr" and n.modifier is not None and n.modifier.matching is not None:
            if str(n.modifier.matching.type).endswith(".Include"):  # on (...), not ignoring (...)
                for side in (n.lhs, n.rhs):
                    uses += _needs(side, set(n.modifier.matching.labels))
        elif kind == "Call" and n.func.name == "label_replace" and n.args[3].val:
            uses += _needs(n.args[0], {n.args[3].val})
    return list(dict.fromkeys(uses))  # unique, in order
