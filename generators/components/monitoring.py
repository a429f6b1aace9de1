"""rendered/<env>/monitoring/: dashboards, alert rules and the dcgm-exporter counters CSV.

- one dashboard per ConfigMap (Grafana sidecar) or per GrafanaDashboard (grafana-operator);
- the alert groups twice: a PrometheusRule, and a ConfigMap holding the same groups as a
  plain rules file (rendered/ holds only Kubernetes objects; promtool tests read that key);
- the counters CSV that turns on what dcgm-exporter's default lacks.
Dashboard JSON is dumped with sorted keys and no timestamps: same input, same bytes.
"""

from __future__ import annotations

import json
from typing import Any

from generators import jsontext, yamlemit
from generators.components import Obj, dashboards, dcgm_counters
from generators.components.alerts import groups
from generators.components.promql import GATE_JOB
from generators.model.types import Environment
from generators.templating import render

RULES_NAME = "trainyard-alerts"
RULES_KEY = "trainyard-alerts.rules.yaml"
# kubectl's client-side apply copies the object into an annotation, and annotations may not
# exceed 262144 bytes in total; above this size Argo CD must apply server-side instead.
SERVER_SIDE_APPLY_ABOVE_BYTES = 200 * 1024
SERVER_SIDE_APPLY = {"argocd.argoproj.io/sync-options": "ServerSideApply=true"}
CONFIGMAP_LIMIT_BYTES = 1024 * 1024  # etcd refuses larger ConfigMaps


def dashboard_json(model: dict[str, Any]) -> str:
    return jsontext.dumps_sorted_indented(model) + "\n"  # json.dumps(sort_keys, indent=2), faster


def object_bytes(obj: Obj) -> int:
    """Size of the object as kubectl sends it (compact JSON)."""
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())


def _sized(obj: Obj) -> Obj:
    size = object_bytes(obj)
    if size > CONFIGMAP_LIMIT_BYTES:
        raise ValueError(f"{obj['kind']} {obj['metadata']['name']} is {size} bytes, over the 1 MiB limit")
    if size > SERVER_SIDE_APPLY_ABOVE_BYTES:
        meta = obj["metadata"]
        meta["annotations"] = {**meta.get("annotations", {}), **SERVER_SIDE_APPLY}
    return obj


def dashboard_objects(env: Environment) -> list[Obj]:
    m = env.monitoring
    objects = []
    for slug, build in dashboards.builders(env):
        uid = m.dashboard_uid(slug)
        text = dashboard_json(build(env))
        if m.dashboards.delivery == "sidecar":
            obj = render(
                "monitoring/dashboard-configmap.yaml.j2",
                name=uid,
                namespace=m.namespace,
                labels=dict(m.dashboards.sidecar_labels),
                key=f"{uid}.json",
                json=text,
                annotations={m.dashboards.sidecar_folder_annotation: m.dashboards.folder},
            )
        else:
            obj = render(
                "monitoring/grafanadashboard.yaml.j2",
                name=uid,
                namespace=m.namespace,
                instance_labels=dict(m.dashboards.instance_selector),
                folder=m.dashboards.folder,
                uid=uid,
                json=text,
            )
        objects.append(_sized(obj))
    return objects


def rule_objects(env: Environment) -> list[Obj]:
    m = env.monitoring
    rule_groups = groups(env)
    rule = render(
        "monitoring/prometheusrule.yaml.j2",
        name=RULES_NAME,
        namespace=m.namespace,
        labels=dict(m.rule_labels),
        groups=rule_groups,
    )
    plain = render(
        "monitoring/rules-configmap.yaml.j2",
        name=f"{RULES_NAME}-rules-file",
        namespace=m.namespace,
        key=RULES_KEY,
        rules=yamlemit.dump({"groups": rule_groups}),
    )
    return [_sized(rule), _sized(plain)]


def scrape_objects(env: Environment) -> list[Obj]:
    """A ServiceMonitor for the overflow gate, whose metrics the overflow alerts and panels use."""
    if env.overflow is None:
        return []
    obj: Obj = render(
        "monitoring/servicemonitor.yaml.j2",
        name=GATE_JOB,
        namespace=env.overflow.namespace,
        labels=dict(env.monitoring.rule_labels),
    )
    return [obj]


def generate(env: Environment) -> list[Obj]:
    m = env.monitoring
    counters: Obj = render(
        "monitoring/dcgm-counters.yaml.j2",
        name=m.dcgm_config_map,
        namespace=m.dcgm_namespace,
        key=dcgm_counters.CSV_KEY,
        csv=dcgm_counters.csv_text(),
    )
    return [counters, *dashboard_objects(env), *rule_objects(env), *scrape_objects(env)]
