"""What a box shared by several test modules must look like again when a module is done
with it (tests/box/conftest.py): the state a scene or a test could leave behind for the next
one, read from the cluster and the box's host processes.

- every rendered object as the apiserver holds it (spec, data, value, rules...; its labels
  and trainyard.dev annotations), so a scene that re-syncs another rendering
  (immutable-change) must have synced the original back; ClusterQueues and LocalQueues with
  the workloads they hold and the quota in use;
- every object of the kinds scenes create (Jobs, JobSets, Deployments, Workloads,
  PriorityClasses), by name; every Pod, counted by its owner;
- every node's taints, unschedulable, labels and trainyard.dev annotations (the health
  controller's quarantine, the gate's taint on the virtual nodes);
- the synthetic dcgm-exporter's faults (a scene sets them over HTTP) and Prometheus's scrape
  targets (a scene adds its exporter's).

Two readings are compared as plain data: `difference` names each key that differs.
"""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from typing import Any

from box import dcgm_fake
from box.kube import Kube, Obj
from box.state import State

# Kinds the scenes and tests create outside the rendering, listed in every namespace.
CREATED = (
    ("batch/v1", "Job"),
    ("apps/v1", "Deployment"),
    ("kueue.x-k8s.io/v1beta2", "Workload"),
    ("jobset.x-k8s.io/v1alpha2", "JobSet"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
)
QUEUE_STATUS = (
    "admittedWorkloads",
    "pendingWorkloads",
    "reservingWorkloads",
    "flavorsUsage",
    "flavorsReservation",
)
OURS = "trainyard.dev/"
HTTP_SECONDS = 10

Reading = dict[str, Any]


def _ours(mapping: dict[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in (mapping or {}).items() if k.startswith(OURS)}


def _key(kind: str, obj: Obj) -> str:
    md = obj["metadata"]  # a listed item has no kind of its own
    return "/".join(p for p in (kind, md.get("namespace", ""), md["name"]) if p)


def _live(obj: Obj) -> Any:
    """A live object without what the apiserver and the controllers rewrite on their own
    (resourceVersion, uid, managedFields, generation, status: except a queue's usage)."""
    md = obj["metadata"]
    kept: dict[str, Any] = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    kept["labels"] = md.get("labels") or {}
    kept["annotations"] = _ours(md.get("annotations"))
    if obj["kind"] in ("ClusterQueue", "LocalQueue"):
        status = obj.get("status") or {}
        kept["status"] = {k: status[k] for k in QUEUE_STATUS if k in status}
    return kept


def _http_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=HTTP_SECONDS) as response:
        return json.load(response)


def _host(state: State) -> Reading:
    reading: Reading = {}
    for process in state.processes:
        if process.name == dcgm_fake.NAME:
            reading["dcgm faults"] = _http_json(f"http://127.0.0.1:{process.ports[0]}/faults")
    if state.prometheus:
        active = _http_json(f"{state.prometheus}/api/v1/targets?state=active")["data"]["activeTargets"]
        reading["prometheus targets"] = sorted(f"{t['scrapePool']} {t['scrapeUrl']}" for t in active)
    return reading


def _listed(kube: Kube, kinds: set[tuple[str, str]]) -> dict[tuple[str, str], dict[tuple[str, str], Obj]]:
    """Every live object of `kinds`, by (namespace, name), each with its apiVersion and kind
    as a GET returns it. One list per kind, not one GET per rendered object: ~25 requests
    instead of ~130, each reading of the box is seconds shorter on the busy 2 cores."""
    found: dict[tuple[str, str], dict[tuple[str, str], Obj]] = {}
    for api_version, kind in kinds:
        found[api_version, kind] = {
            (o["metadata"].get("namespace", ""), o["metadata"]["name"]): {
                "apiVersion": api_version,
                "kind": kind,
                **o,
            }
            for o in kube.list(api_version, kind)
        }
    return found


def read(kube: Kube, state: State, rendered: list[Obj]) -> Reading:
    """The box as it is now (module docstring)."""
    reading: Reading = {}
    listed = _listed(kube, {(o["apiVersion"], o["kind"]) for o in rendered})
    for obj in rendered:
        md = obj["metadata"]
        live = listed[obj["apiVersion"], obj["kind"]].get((md.get("namespace", ""), md["name"]))
        reading[_key(obj["kind"], obj)] = None if live is None else _live(live)
    for api_version, kind in CREATED:
        names = sorted(_key(kind, o) for o in kube.list(api_version, kind))
        reading[f"every {kind}"] = names
    pods: Counter[str] = Counter()
    for pod in kube.list("v1", "Pod"):
        md = pod["metadata"]
        owners = md.get("ownerReferences") or [{"kind": "-", "name": md["name"]}]
        pods[f"{md['namespace']}/{owners[0]['kind']}/{owners[0]['name']}"] += 1
    reading["pods by owner"] = dict(sorted(pods.items()))
    for node in kube.list("v1", "Node"):
        md, spec = node["metadata"], node.get("spec") or {}
        reading[f"Node/{md['name']}"] = {
            "taints": sorted((t["key"], t.get("value", ""), t["effect"]) for t in spec.get("taints") or []),
            "unschedulable": bool(spec.get("unschedulable")),
            "labels": md.get("labels") or {},
            "annotations": _ours(md.get("annotations")),
        }
    reading.update(_host(state))
    return reading


def difference(before: Reading, after: Reading) -> list[str]:
    """One line per key whose value differs (or that only one reading has)."""
    lines = []
    for key in sorted(set(before) | set(after)):
        was, now = before.get(key, "<absent>"), after.get(key, "<absent>")
        if was != now:
            lines.append(f"{key}: was {was!r:.600}, now {now!r:.600}")
    return lines
