"""Small, independent evaluators of what the charts' objects mean, for tests/monitoring/test_charts.py.

- `matches`: a Kubernetes metav1.LabelSelector (k8s.io/apimachinery pkg/apis/meta/v1/helpers.go
  LabelSelectorAsSelector): `None` matches nothing, `{}` everything; every matchLabels pair
  and every matchExpressions requirement (In, NotIn, Exists, DoesNotExist) must hold.
- `selected`: whether a Prometheus object (prometheus-operator) picks up a ServiceMonitor or
  PrometheusRule, read in the CRD's field descriptions (kube-prometheus-stack 88.5.3
  charts/crds/crds/crd-prometheuses.yaml): `serviceMonitorSelector` / `ruleSelector` null
  match no objects, empty match all; `serviceMonitorNamespaceSelector` /
  `ruleNamespaceSelector` null match the Prometheus' own namespace only, empty all.
- `relabel`: Prometheus' relabel_config (prometheus/model/relabel), for the actions the charts
  use: replace (default), keep, drop, labelmap; the regex is fully anchored (RE2 there; the
  patterns used are in the common subset), `$1` / `${1}` / `${name}` expand groups. Prometheus
  sets `instance` to `__address__` after relabeling when no rule set it.
- `job_label`: the job a ServiceMonitor's targets get: the Service's label named by
  spec.jobLabel, else the Service's name (prometheus-operator's ServiceMonitor API docs,
  field `jobLabel`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

Labels = Mapping[str, str]


def matches(selector: Mapping[str, Any] | None, labels: Labels) -> bool:
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for requirement in selector.get("matchExpressions") or []:
        key, operator = requirement["key"], requirement["operator"]
        values = requirement.get("values") or []
        if operator == "In":
            ok = key in labels and labels[key] in values
        elif operator == "NotIn":
            ok = key not in labels or labels[key] not in values
        elif operator == "Exists":
            ok = key in labels
        elif operator == "DoesNotExist":
            ok = key not in labels
        else:
            raise ValueError(f"unknown label selector operator {operator!r}")
        if not ok:
            return False
    return True


_SELECTORS = {"ServiceMonitor": "serviceMonitor", "PrometheusRule": "rule"}


def selected(
    prometheus: Mapping[str, Any], obj: Mapping[str, Any], namespace_labels: Mapping[str, Labels]
) -> bool:
    """Does this Prometheus pick up `obj`? `namespace_labels`: labels per namespace name
    (every namespace carries kubernetes.io/metadata.name = its name)."""
    field = _SELECTORS[obj["kind"]]
    spec, meta = prometheus["spec"], obj["metadata"]
    namespace = meta["namespace"]
    ns_selector = spec.get(f"{field}NamespaceSelector")
    if ns_selector is None:
        in_namespace = namespace == prometheus["metadata"]["namespace"]
    else:
        labels = {"kubernetes.io/metadata.name": namespace, **namespace_labels.get(namespace, {})}
        in_namespace = matches(ns_selector, labels)
    return in_namespace and matches(spec.get(f"{field}Selector"), meta.get("labels") or {})


def _expand(template: str, found: re.Match[str]) -> str:
    def group(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        value = found.group(int(name) if name.isdigit() else name)
        return value or ""

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", group, template)


def relabel(labels: Labels, configs: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The target's labels after `configs` (prometheus-operator's camelCase field names)."""
    out = dict(labels)
    for config in configs:
        action = str(config.get("action", "replace")).lower()
        regex = re.compile(config.get("regex", "(.*)"))
        source = config.get("separator", ";").join(out.get(n, "") for n in config.get("sourceLabels", []))
        if action == "replace":
            found = regex.fullmatch(source)
            if found is None:
                continue
            target = _expand(config["targetLabel"], found)
            value = _expand(config.get("replacement", "$1"), found)
            if value:
                out[target] = value
            else:
                out.pop(target, None)
        elif action in ("keep", "drop"):
            if (regex.fullmatch(source) is not None) != (action == "keep"):
                return {}
        elif action == "labelmap":
            for name in list(out):
                found = regex.fullmatch(name)
                if found is not None:
                    out[_expand(config.get("replacement", "$1"), found)] = out[name]
        else:
            raise ValueError(f"relabel action {action!r} is not modelled here")
    out.setdefault("instance", out.get("__address__", ""))
    return out


def job_label(service_monitor: Mapping[str, Any], service: Mapping[str, Any]) -> str:
    key = service_monitor["spec"].get("jobLabel")
    labels = service["metadata"].get("labels") or {}
    if key and key in labels:
        return str(labels[key])
    return str(service["metadata"]["name"])
