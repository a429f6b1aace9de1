"""The overflow gate's free-GPU query must count only GPUs inference can use, and must not
turn missing data into a number.

The gate opens (inference may spill, money is spent) when the query reads below a threshold
and closes when it reads above another. Two mistakes keep it closed while inference
starves, and both can be seen in the query text (spec.query of every TaintPolicy, rendered
or shipped in a ConfigMap):

- A sample made from nothing: `vector(...)` (as in `or vector(0)`), `absent(...)` or
  `absent_over_time(...)`. When kube-state-metrics is down or its series are stale, such a
  query still answers a number, often "plenty free" (a real Prometheus returned 80 free
  when the truth was 16), so the policy's onPrometheusUnavailable never applies. A query
  that reads kube-state-metrics series must also read its `up` series (the environment's
  kube-state-metrics selector), the only way to tell stale inputs from a real reading.
- Capacity inference cannot use: a query that reads node allocatable or capacity must
  restrict nodes with kube_node_labels to pools inference can use (role inference or
  shared, no NoSchedule/NoExecute taint inference does not tolerate:
  generators.model.overflow.inference_pools), and no kube_node_labels selector may take in
  the nodes of another pool (prod's idle H100 reserve nodes alone are 128 GPUs, above the
  close threshold of 64).

What is NOT checked (it needs a PromQL evaluator, not text): how the guard is combined
(`and on () ...` versus something that ignores it), whether requests are subtracted per
node, and queries over recording rules (no kube_* series named: nothing to check). A
selector used to exclude nodes (`unless on (node) kube_node_labels{<training pool>}`) is
recognised and allowed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping

from generators.model.environment import Environment
from generators.model.overflow import INFERENCE_ROLES, blocks_inference, inference_pools
from generators.model.types import Pool
from generators.promql.vocabulary import ksm_label
from policies.context import Context, Finding, RenderedObject
from policies.taints import TAINT_POLICY_KIND

ID = "gate-query"
RATIONALE = (
    "a gate query that counts GPUs inference cannot use, or reads missing data as a number, "
    "keeps the overflow gate closed while inference starves"
)
SEVERITY = "error"

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_FROM_NOTHING = re.compile(r"\b(vector|absent|absent_over_time)\s*\(")
_SELECTOR = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^{}]*)\}")
_MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)\s*"((?:[^"\\]|\\.)*)"')
_CAPACITY = ("kube_node_status_allocatable", "kube_node_status_capacity")
# What may stand between `unless` and the selector it excludes: `on (node)`, `max by (node) (`.
_WRAPPERS = re.compile(
    r"(\s+|\(|\b(on|ignoring)\s*\([^()]*\)|\b(max|min|sum|count|group|avg)\s*"
    r"((by|without)\s*\([^()]*\))?)$"
)

Matcher = tuple[str, str, str]


def check(ctx: Context) -> Iterable[Finding]:
    for item, where, query in _queries(ctx):
        yield from (item.finding(f"{where}: {message}") for message in problems(query, ctx.env))


def _queries(ctx: Context) -> Iterator[tuple[RenderedObject, str, str]]:
    for item in ctx.objects:
        documents = [("", item.obj)] if item.kind == TAINT_POLICY_KIND else []
        documents += [(f"data[{key}].", d) for key, d in item.embedded if d.get("kind") == TAINT_POLICY_KIND]
        for prefix, document in documents:
            spec = document.get("spec")
            if isinstance(spec, Mapping) and isinstance(spec.get("query"), str):
                yield item, f"{prefix}spec.query", spec["query"]


def problems(query: str, env: Environment) -> list[str]:
    """What is wrong with `query` as the gate's free-GPU query of `env` (empty: nothing seen)."""
    found = []
    code = _STRING.sub('""', query)  # a label value never counts as a function call
    for function in sorted({m.group(1) for m in _FROM_NOTHING.finditer(code)}):
        found.append(
            f"{function}(...) makes a sample out of nothing: with kube-state-metrics down or "
            "stale the gate reads a number instead of applying onPrometheusUnavailable; "
            "leave absence absent"
        )
    selectors = [(m.group(1), _matchers(m.group(2)), m.start()) for m in _SELECTOR.finditer(query)]
    ksm = set(_matchers(env.monitoring.selectors.kube_state_metrics))
    if any(name.startswith("kube_") for name, _, _ in selectors) and not any(
        name == "up" and ksm <= set(matchers) for name, matchers, _ in selectors
    ):
        found.append(
            "reads kube-state-metrics series but never its up series "
            f"(up{{{env.monitoring.selectors.kube_state_metrics}}}): stale or missing inputs "
            "cannot be told from a real reading; guard with `and on () (min(up{...}) == 1)`"
        )
    if any(name in _CAPACITY for name, _, _ in selectors):
        found += _node_restriction(query, selectors, env)
    return found


def _node_restriction(
    query: str, selectors: list[tuple[str, list[Matcher], int]], env: Environment
) -> list[str]:
    usable = inference_pools(env.pools)
    names = ", ".join(p.name for p in usable) or "none"
    taken_in = [
        (matchers, [p for p in env.pools if _selects(matchers, p)])
        for name, matchers, start in selectors
        if name == "kube_node_labels" and not _excluding(query[:start])
    ]
    found = []
    for _, pools in taken_in:
        for pool in pools:
            if pool not in usable:
                found.append(
                    f"selects the nodes of pool {pool.name!r} ({_why_unusable(pool)}), whose GPUs "
                    f"inference cannot use; count only pools inference can use ({names})"
                )
    if not any(pools and all(p in usable for p in pools) for _, pools in taken_in):
        found.append(
            "counts node capacity without restricting nodes to pools inference can use "
            f"({names}): join with `and on (node) max by (node) (kube_node_labels{{...}})` of those "
            "pools' nodeLabels"
        )
    return sorted(set(found))


def _matchers(text: str) -> list[Matcher]:
    return [(m.group(1), m.group(2), m.group(3)) for m in _MATCHER.finditer(text)]


def _selects(matchers: list[Matcher], pool: Pool) -> bool:
    """Whether a kube_node_labels selector takes in nodes labelled like `pool` (a label the
    pool does not set reads as empty, as in PromQL)."""
    values = {ksm_label(key): value for key, value in pool.node_labels.items()}
    for label, op, expected in matchers:
        if not label.startswith("label_"):
            continue  # job, node, ...: not about the pool
        value = values.get(label, "")
        matched = value == expected if op in ("=", "!=") else re.fullmatch(expected, value) is not None
        if matched is (op in ("!=", "!~")):
            return False
    return True


def _excluding(prefix: str) -> bool:
    """Whether the selector after `prefix` is the right-hand side of `unless`."""
    while True:
        stripped = _WRAPPERS.sub("", prefix)
        if stripped == prefix:
            return prefix.endswith("unless")
        prefix = stripped


def _why_unusable(pool: Pool) -> str:
    if pool.role not in INFERENCE_ROLES:
        return f"role {pool.role}"
    blocking = [t for t in pool.taints if blocks_inference(t.key, t.effect)]
    return ", ".join(f"{t.effect} taint {t.key}" for t in blocking) or "not usable by inference"
