"""Kueue from its pinned Helm chart, with its webhooks, its controller a process beside the box.

`helm template` renders the pinned chart (../shared/charts/kueue-0.19.2.tgz, through
tools.toolchain.archive_path) with the environment's rendered values
(rendered/<env>/installers/kueue-values.yaml) for Kubernetes 1.36.5, and the box applies what
the chart renders, with four differences, all forced by the controller running as a process
on the host rather than as the chart's Deployment:

- The Deployment is not applied: the pinned Kueue binary runs instead (box/
  kueue.py), with the Configuration of the chart's kueue-manager-config ConfigMap (or the
  rendered one, when the environment delivers it as a ConfigMap), and authenticates as the
  chart's ServiceAccount with a TokenRequest token, so the chart's RBAC is what it may do.
- Webhook and CRD-conversion clientConfigs name `service: kueue-webhook-service`; with no
  pod network the apiserver could not reach a Service, so each becomes `url:
  https://127.0.0.1:<port><path>` with the caBundle of the serving certificate the process
  presents (internal cert management issues certificates for the Service's DNS name only).
- The visibility APIServices are not applied: the on-demand visibility server is off (its
  certificate path is hard-coded, see kueue.py), and an unavailable aggregated API would
  break discovery for every client.
- The webhook Secret is not applied (no internal cert management fills it).
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import yaml

from box import charts
from box.kube import Obj

CHART = "kueue-0.19.2.tgz"
RELEASE = "kueue"
SERVICE_ACCOUNT = "kueue-controller-manager"
SKIPPED_KINDS = {
    "Deployment": "the pinned controller runs as a process instead",
    "APIService": "the on-demand visibility server is off",
    "Secret": "no internal cert management fills the webhook Secret",
}


def template(values: Path | None, namespace: str) -> list[Obj]:
    """Every object the pinned Kueue chart renders for these values."""
    return charts.template(CHART, RELEASE, values, namespace)


def _url_config(client_config: Obj, base_url: str, ca_bundle: str) -> Obj:
    service = client_config.get("service") or {}
    return {"url": base_url + str(service.get("path", "")), "caBundle": ca_bundle}


def wired(objects: list[Obj], base_url: str, ca_pem: bytes) -> list[Obj]:
    """The chart's objects to apply, webhooks and conversion pointed at `base_url` (see module
    docstring); the skipped kinds are left out."""
    ca_bundle = base64.b64encode(ca_pem).decode()
    out = []
    for original in objects:
        if original["kind"] in SKIPPED_KINDS:
            continue
        obj = copy.deepcopy(original)
        if obj["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            for webhook in obj.get("webhooks") or []:
                webhook["clientConfig"] = _url_config(webhook["clientConfig"], base_url, ca_bundle)
        elif obj["kind"] == "CustomResourceDefinition":
            webhook = ((obj["spec"].get("conversion") or {}).get("webhook")) or {}
            if "clientConfig" in webhook:
                webhook["clientConfig"] = _url_config(webhook["clientConfig"], base_url, ca_bundle)
        out.append(obj)
    return out


def configuration(
    chart_objects: list[Obj], rendered_objects: list[Obj], name: str, key: str
) -> dict[str, Any]:
    """Kueue's Configuration as the cluster holds it: the chart's ConfigMap `name`, or the
    rendered one of that name when the environment ships it (applied after the chart)."""
    found = [
        obj
        for obj in [*chart_objects, *rendered_objects]
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == name
    ]
    if not found:
        raise RuntimeError(f"neither the Kueue chart nor the environment renders ConfigMap {name}")
    document: dict[str, Any] = yaml.safe_load(found[-1]["data"][key])
    return document
