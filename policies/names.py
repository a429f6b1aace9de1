"""Names and labels the apiserver and Grafana accept.

- metadata.name: DNS-1123 label (<= 63) for Namespace and Service; a path segment for RBAC
  kinds (they allow `:`); DNS-1123 subdomain (<= 253) otherwise. LocalQueue and
  WorkloadPriorityClass names are also label values (<= 63): jobs carry them as labels.
- metadata.namespace: DNS-1123 label.
- labels of the object and of every template: qualified-name keys, values <= 63 chars.
- Grafana dashboard UIDs (GrafanaDashboard spec.uid / spec.json, or dashboard JSON in a
  ConfigMap): at most 40 characters of [A-Za-z0-9_-], unique within the environment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from policies.context import Context, Finding, RenderedObject
from policies.walk import label_maps, show

ID = "names"
RATIONALE = (
    "the apiserver rejects invalid names and labels, and Grafana rejects or silently "
    "merges dashboards with long or duplicate UIDs"
)
SEVERITY = "error"
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL = re.compile(rf"^{_LABEL}$")
DNS_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
DASHBOARD_UID = re.compile(r"^[A-Za-z0-9_-]+$")
LABEL_MAX, SUBDOMAIN_MAX, DASHBOARD_UID_MAX = 63, 253, 40
LABEL_NAMED_KINDS = ("Namespace", "Service")
VALUE_NAMED_KINDS = ("LocalQueue", "WorkloadPriorityClass")  # used as label values by jobs
PATH_SEGMENT_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")


def check(ctx: Context) -> Iterable[Finding]:
    for item in ctx.objects:
        yield from _name(item)
        if item.namespace is not None and not dns_label(item.namespace):
            yield item.finding(f"metadata.namespace {item.namespace!r} is not a DNS-1123 label")
        for path, labels in label_maps(item.tree):
            for key, value in labels.items():
                for problem in label_problems(str(key), value):
                    yield item.finding(f"{show(path)}[{key}]: {problem}")
    yield from _dashboard_uids(ctx)


def dns_label(name: str) -> bool:
    return len(name) <= LABEL_MAX and bool(DNS_LABEL.match(name))


def dns_subdomain(name: str) -> bool:
    return len(name) <= SUBDOMAIN_MAX and bool(DNS_SUBDOMAIN.match(name))


def _name(item: RenderedObject) -> Iterator[Finding]:
    name = item.name
    if item.kind in PATH_SEGMENT_KINDS:
        if not name or name in (".", "..") or "/" in name or "%" in name:
            yield item.finding(f"metadata.name {name!r} is not a valid path segment")
    elif item.kind in LABEL_NAMED_KINDS:
        if not dns_label(name):
            yield item.finding(f"metadata.name {name!r} is not a DNS-1123 label (<= {LABEL_MAX})")
    elif not dns_subdomain(name):
        yield item.finding(f"metadata.name {name!r} is not a DNS-1123 subdomain (<= {SUBDOMAIN_MAX})")
    if item.kind in VALUE_NAMED_KINDS and len(name) > LABEL_MAX:
        yield item.finding(
            f"metadata.name is {len(name)} characters; jobs carry it as a label "
            f"value, which holds at most {LABEL_MAX}"
        )


def label_problems(key: str, value: Any) -> Iterator[str]:
    prefix, _, name = key.rpartition("/")
    if prefix and not dns_subdomain(prefix):
        yield f"label key prefix {prefix!r} is not a DNS-1123 subdomain"
    if len(name) > LABEL_MAX or not LABEL_NAME.match(name):
        yield f"label key name {name!r} is not a qualified name (<= {LABEL_MAX})"
    text = "" if value is None else str(value)
    if not isinstance(value, str):
        yield f"label value {value!r} is not a string"
    elif len(text) > LABEL_MAX:
        yield f"label value is {len(text)} characters, more than {LABEL_MAX}"
    elif text and not LABEL_NAME.match(text):
        yield f"label value {text!r} has characters a label value cannot hold"


def dashboard_uids(item: RenderedObject) -> Iterator[tuple[str, str]]:
    """(where, uid) of every Grafana dashboard this object ships."""
    if item.kind == "GrafanaDashboard":
        if isinstance(uid := item.spec.get("uid"), str):
            yield "spec.uid", uid
            return  # it overrides the uid inside the JSON
        raw = item.spec.get("json")
        try:
            model = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            model = None
        if isinstance(model, Mapping) and isinstance(model.get("uid"), str):
            yield "spec.json.uid", model["uid"]
    for key, document in item.embedded:
        if key.endswith(".json") and _is_dashboard(document):
            yield f"data[{key}].uid", str(document["uid"])


def _is_dashboard(document: Mapping[str, Any]) -> bool:
    return "uid" in document and ("panels" in document or "schemaVersion" in document)


def _dashboard_uids(ctx: Context) -> Iterator[Finding]:
    seen: dict[str, str] = {}
    for item in ctx.objects:
        for where, uid in dashboard_uids(item):
            if len(uid) > DASHBOARD_UID_MAX or not DASHBOARD_UID.match(uid):
                yield item.finding(
                    f"{where} {uid!r}: a Grafana dashboard UID is 1..{DASHBOARD_UID_MAX} "
                    "characters of [A-Za-z0-9_-]"
                )
            if uid in seen:
                yield item.finding(f"{where} {uid!r} is also the UID of {seen[uid]}: Grafana keeps one")
            else:
                seen[uid] = f"{item.kind}/{item.name} ({item.path})"
