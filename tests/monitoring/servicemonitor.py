"""A ServiceMonitor endpoint as the Prometheus scrape config prometheus-operator writes for it.

Translated from prometheus-operator v0.93.0 (the operator kube-prometheus-stack 88.5.3
ships is v0.93.1; v0.93.0 is the nearest tag in the mirror read here, commit
f8fafd475f3d132e239432ae6172de60a6cb6516), `pkg/prometheus/promcfg.go`:

- `generateServiceMonitorConfig` (line 1949): job name `serviceMonitor/<ns>/<name>/<i>`,
  `honor_labels` (1965), role from `defaultEndpointRoleFlavor` (1976): `endpoints` unless
  the Prometheus asks for EndpointSlice (`endpointRoleFlavor`, 208-217; the chart's
  Prometheus does not), namespaces from `getNamespacesFromNamespaceSelector`;
- relabel_configs in the operator's order: `initRelabelings` (1222: job into
  `__tmp_prometheus_job_name`, line 2041), one `keep` per selector label (matchLabels
  sorted, then matchExpressions), `keep` on the endpoint's port name (2086), target kind
  Node/Pod into `node`/`pod`, then namespace, service, pod, container (2118),
  `generateRunningFilter` (2153, 2242: drop Failed/Succeeded pods), job from the service
  name and then from `jobLabel` (2176), `endpoint` (2193), the endpoint's own
  `relabelings` through `generateRelabelConfig` (2212, 2396: camelCase fields to
  snake_case, action lowercased), sharding with one shard (2214,
  `appendShardingRelabelingWithLabel` 2304: `$(SHARD)` is what the config reloader
  substitutes, 0 for the only shard);
- `metric_relabel_configs` from the endpoint's `metricRelabelings` (2233).

Fields the chart does not use and this translation does not implement are refused
(`Unsupported`), so a chart that starts using one fails here instead of being scraped
differently than in a cluster. `tests/monitoring/test_scrape_live.py` checks the
translation against the operator's own golden file for its `TestGenerateRelabelConfig`.
"""

from __future__ import annotations

import re

from generators.k8s.objects import Obj

# Endpoint fields translated below; any other field present is refused.
_ENDPOINT_FIELDS = {
    "port",
    "scheme",
    "path",
    "interval",
    "scrapeTimeout",
    "honorLabels",
    "honorTimestamps",
    "relabelings",
    "metricRelabelings",
    "filterRunning",
}
_SPEC_FIELDS = {"jobLabel", "selector", "namespaceSelector", "endpoints", "attachMetadata"}
_RELABEL_FIELDS = ("sourceLabels", "separator", "targetLabel", "regex", "modulus", "replacement", "action")
SHARD = "0"  # one shard: the config reloader writes 0 for $(SHARD)


class Unsupported(ValueError):
    """The ServiceMonitor uses a field this translation does not implement."""


def sanitize(name: str) -> str:
    """promcfg.go's sanitizeLabelName: every character outside [a-zA-Z0-9_] becomes _."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def relabel_configs(configs: list[Obj]) -> list[Obj]:
    """`generateRelabelConfig`: the CRD's RelabelConfig list as Prometheus relabel_configs."""
    out = []
    for config in configs:
        unknown = set(config) - set(_RELABEL_FIELDS)
        if unknown:
            raise Unsupported(f"relabeling fields {sorted(unknown)}")
        rule: Obj = {}
        for key in _RELABEL_FIELDS:
            value = config.get(key)
            if value is None or (key in ("sourceLabels", "targetLabel", "regex", "action") and not value):
                continue  # the operator writes only what is set ("" target/regex/action: unset)
            if key == "modulus" and value == 0:
                continue
            name = re.sub(r"[A-Z]", lambda m: "_" + m[0].lower(), key)
            rule[name] = value.lower() if key == "action" else value
        out.append(rule)
    return out


def _selector_rules(selector: Obj) -> list[Obj]:
    rules: list[Obj] = []
    for key in sorted(selector.get("matchLabels") or {}):
        label = sanitize(key)
        rules.append(
            {
                "action": "keep",
                "source_labels": [
                    f"__meta_kubernetes_service_label_{label}",
                    f"__meta_kubernetes_service_labelpresent_{label}",
                ],
                "regex": f"({selector['matchLabels'][key]});true",
            }
        )
    for expression in selector.get("matchExpressions") or []:
        label, operator = sanitize(expression["key"]), expression["operator"]
        values = f"({'|'.join(expression.get('values') or [])});true"
        present = f"__meta_kubernetes_service_labelpresent_{label}"
        both = [f"__meta_kubernetes_service_label_{label}", present]
        rules.append(
            {
                "In": {"action": "keep", "source_labels": both, "regex": values},
                "NotIn": {"action": "drop", "source_labels": both, "regex": values},
                "Exists": {"action": "keep", "source_labels": [present], "regex": "true"},
                "DoesNotExist": {"action": "drop", "source_labels": [present], "regex": "true"},
            }[operator]
        )
    return rules


def _target_rules(port: str) -> list[Obj]:
    """Port filter and the labels every ServiceMonitor target gets (role endpoints)."""
    kind = [
        "__meta_kubernetes_endpoint_address_target_kind",
        "__meta_kubernetes_endpoint_address_target_name",
    ]
    return [
        {"action": "keep", "source_labels": ["__meta_kubernetes_endpoint_port_name"], "regex": port},
        {
            "source_labels": list(kind),
            "separator": ";",
            "regex": "Node;(.*)",
            "replacement": "${1}",
            "target_label": "node",
        },
        {
            "source_labels": list(kind),
            "separator": ";",
            "regex": "Pod;(.*)",
            "replacement": "${1}",
            "target_label": "pod",
        },
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "service"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
        {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
    ]


_SHARDING: list[Obj] = [
    {
        "source_labels": ["__address__", "__tmp_hash"],
        "target_label": "__tmp_hash",
        "regex": "(.+);",
        "replacement": "$1",
        "action": "replace",
    },
    {"source_labels": ["__tmp_hash"], "target_label": "__tmp_hash", "modulus": 1, "action": "hashmod"},
    {"source_labels": ["__tmp_hash", "__tmp_disable_sharding"], "regex": "$(SHARD);|.+;.+", "action": "keep"},
]


def scrape_config(monitor: Obj, index: int, sd: Obj | None = None, shard: str | None = SHARD) -> Obj:
    """The scrape config for endpoint `index` of `monitor` (a ServiceMonitor as a dict).

    `sd` is merged into the kubernetes_sd_configs entry (the operator leaves API access to
    in-cluster config; a process outside a pod passes `kubeconfig_file`). `shard=None`
    keeps `$(SHARD)` as the operator writes it (before the reloader substitutes it).
    """
    meta, spec = monitor["metadata"], monitor["spec"]
    _refuse(spec, _SPEC_FIELDS, "spec")
    endpoint = spec["endpoints"][index]
    _refuse(endpoint, _ENDPOINT_FIELDS, f"endpoints[{index}]")
    if (spec.get("attachMetadata") or {}).get("node"):
        raise Unsupported("spec.attachMetadata.node: true")
    port = endpoint.get("port")
    if not port:
        raise Unsupported(f"endpoints[{index}] without port (targetPort is not implemented)")
    config: Obj = {
        "job_name": f"serviceMonitor/{meta['namespace']}/{meta['name']}/{index}",
        "honor_labels": bool(endpoint.get("honorLabels", False)),
    }
    if "honorTimestamps" in endpoint:
        config["honor_timestamps"] = endpoint["honorTimestamps"]
    config["kubernetes_sd_configs"] = [_discovery(spec, meta["namespace"], sd or {})]
    for field, key in (
        ("interval", "scrape_interval"),
        ("scrapeTimeout", "scrape_timeout"),
        ("path", "metrics_path"),
        ("scheme", "scheme"),
    ):
        if endpoint.get(field):
            config[key] = endpoint[field]
    config["relabel_configs"] = _relabelings(spec, endpoint, port, shard)
    if endpoint.get("metricRelabelings"):
        config["metric_relabel_configs"] = relabel_configs(endpoint["metricRelabelings"])
    return config


def _discovery(spec: Obj, namespace: str, sd: Obj) -> Obj:
    discovery: Obj = {"role": "endpoints"}
    namespaces = _namespaces(spec.get("namespaceSelector") or {}, namespace)
    if namespaces:
        discovery["namespaces"] = {"names": namespaces}
    if "attachMetadata" in spec:
        discovery["attach_metadata"] = {"node": False}
    return {**discovery, **sd}


def _relabelings(spec: Obj, endpoint: Obj, port: str, shard: str | None) -> list[Obj]:
    """relabel_configs in the order generateServiceMonitorConfig appends them."""
    rules: list[Obj] = [{"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"}]
    rules += _selector_rules(spec.get("selector") or {})
    rules += _target_rules(port)
    if endpoint.get("filterRunning", True):
        rules.append(
            {
                "action": "drop",
                "source_labels": ["__meta_kubernetes_pod_phase"],
                "regex": "(Failed|Succeeded)",
            }
        )
    rules.append(
        {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job", "replacement": "${1}"}
    )
    if spec.get("jobLabel"):
        rules.append(
            {
                "source_labels": [f"__meta_kubernetes_service_label_{sanitize(spec['jobLabel'])}"],
                "target_label": "job",
                "regex": "(.+)",
                "replacement": "${1}",
            }
        )
    rules.append({"target_label": "endpoint", "replacement": port})
    rules += relabel_configs(endpoint.get("relabelings") or [])
    return rules + _sharding(shard)


def _sharding(shard: str | None) -> list[Obj]:
    if shard is None:
        return [dict(rule) for rule in _SHARDING]
    return [
        {**rule, "regex": rule["regex"].replace("$(SHARD)", shard)}
        if rule.get("action") == "keep"
        else dict(rule)
        for rule in _SHARDING
    ]


def _namespaces(selector: Obj, own: str) -> list[str]:
    if selector.get("any"):
        return []
    return list(selector.get("matchNames") or [own])


def _refuse(found: Obj, known: set[str], where: str) -> None:
    unknown = sorted(key for key, value in found.items() if key not in known and value not in (None, [], {}))
    if unknown:
        raise Unsupported(f"{where} fields {unknown} are not translated (see this module's docstring)")
