"""What Argo CD v3.5.1 reads off the committed rendered/ during a sync, checked against its own
rules (the source is ../shared/src/argo-cd-3.5.1.tar.gz; file:line below are inside it):

- after each sync wave it waits for the wave's objects to be Healthy, fails the operation on a
  Degraded one and waits on a Progressing one (gitops-engine/pkg/sync/sync_context.go:555-567,
  :576-595); only the operation's last wave is never waited on (:703-712);
- an HPA reads Degraded while its target cannot be read (`AbleToScale` `FailedGetScale`) or its
  External metric cannot (`ScalingActive` `FailedGetExternalMetric`)
  (gitops-engine/pkg/health/health_hpa.go:108-118);
- a GrafanaDashboard or GrafanaFolder with no status (no grafana-operator reconciles it) reads
  Progressing for ever (resource_customizations/grafana.integreatly.org/<Kind>/health.lua);
- the Application's own health skips an object annotated
  `argocd.argoproj.io/ignore-healthcheck: "true"` (controller/health.go:40-43);
- `ignoreDifferences` applies only to objects the Application manages (controller/state.go:774,
  GetManagedLiveObjs: the live objects matching the Application's target objects).

The expectations are literals taken from those lines, not from the generators.
"""

from __future__ import annotations

import re

import pytest
import yaml

from generators.gitops.sources import applied
from generators.k8s.objects import Obj
from tests.support import ROOT

from .conftest import ENVIRONMENTS, rendered_files, rendered_objects

WAVE = "argocd.argoproj.io/sync-wave"
IGNORE_HEALTH = "argocd.argoproj.io/ignore-healthcheck"
EXTERNAL_METRICS = "external.metrics.k8s.io"
# (group, kind) whose health depends on something no object of the Application provides:
# an HPA on its target Deployment (the inference owner's) and on the external metrics API;
# grafana-operator's kinds on a grafana-operator and a matching Grafana.
HEALTH_FROM_ELSEWHERE = {
    ("autoscaling", "HorizontalPodAutoscaler"),
    ("grafana.integreatly.org", "GrafanaDashboard"),
    ("grafana.integreatly.org", "GrafanaFolder"),
}


def _wave(obj: Obj) -> int:
    return int(obj["metadata"]["annotations"][WAVE])


def _group_kind(obj: Obj) -> tuple[str, str]:
    return obj["apiVersion"].rpartition("/")[0], obj["kind"]


def _applications(env: str) -> list[Obj]:
    return [o for o in rendered_objects(env).values() if o["kind"] == "Application"]


@pytest.mark.parametrize("env", [e for e in ENVIRONMENTS if e != "dev"])
def test_an_hpa_on_an_external_metric_is_applied_after_the_apiservice_serving_it(env: str) -> None:
    """Else the HPA's wave waits on `FailedGetExternalMetric` (Degraded) and the wave that
    registers the metrics API is never applied: the first sync fails."""
    objects = rendered_objects(env).values()
    hpas = [
        o
        for o in objects
        if o["kind"] == "HorizontalPodAutoscaler"
        and any(m["type"] == "External" for m in o["spec"]["metrics"])
    ]
    services = [o for o in objects if o["kind"] == "APIService" and o["spec"]["group"] == EXTERNAL_METRICS]
    assert hpas and services, env  # staging and prod render both
    for hpa in hpas:
        for service in services:
            assert _wave(hpa) > _wave(service), (hpa["metadata"]["name"], service["metadata"]["name"])


def test_objects_whose_health_comes_from_elsewhere_are_never_waited_on(env: str) -> None:
    """In the last wave (never waited on when nothing is pruned) and left out of the
    Application's health: a first sync completes and the Application is Healthy while the
    inference Deployments do not exist yet and no grafana-operator reconciles the dashboards."""
    objects = [o for p, o in rendered_objects(env).items() if not p.startswith("argocd/")]
    last = max(_wave(o) for o in objects)
    elsewhere = [o for o in objects if _group_kind(o) in HEALTH_FROM_ELSEWHERE]
    for obj in elsewhere:
        name = f"{obj['kind']}/{obj['metadata']['name']}"
        assert _wave(obj) == last, name
        assert obj["metadata"]["annotations"].get(IGNORE_HEALTH) == "true", name
    if elsewhere:  # nothing else shares that wave: what Argo CD must wait for comes before it
        assert {_group_kind(o) for o in objects if _wave(o) == last} <= HEALTH_FROM_ELSEWHERE
    # Staging renders both (its dashboards go through grafana-operator), prod HPAs only.
    expected = {"dev": set(), "prod": {"HorizontalPodAutoscaler"}}.get(
        env, {"HorizontalPodAutoscaler", "GrafanaDashboard"}
    )
    assert {o["kind"] for o in elsewhere} == expected


def test_every_ignore_difference_names_an_object_the_application_manages(env: str) -> None:
    """An entry for an object the Application does not render is inert (state.go:774): it
    protects nobody and tells the reader the opposite."""
    apps = _applications(env)
    assert len(apps) == 2
    for app in apps:
        base = f"rendered/{env}/"
        managed = {
            p.removeprefix(base)
            for p in applied(app["spec"]["source"], [base + p for p in rendered_files(env)])
        }
        assert managed, app["metadata"]["name"]
        objects = [o for p, o in rendered_objects(env).items() if p in managed]
        for entry in app["spec"].get("ignoreDifferences", []):
            matches = [
                o
                for o in objects
                if _group_kind(o) == (entry["group"], entry["kind"])
                and entry.get("name", o["metadata"]["name"]) == o["metadata"]["name"]
                and entry.get("namespace", o["metadata"].get("namespace")) == o["metadata"].get("namespace")
            ]
            assert matches, (app["metadata"]["name"], entry)


def test_overflow_md_gives_the_inference_owners_their_ignore_differences() -> None:
    """docs/overflow.md's block is what the owner of production's inference Deployments puts
    in their own Application: `/spec/replicas` of every Deployment a rendered HPA scales."""
    doc = (ROOT / "docs" / "overflow.md").read_text(encoding="utf-8")
    section = doc.split("## The inference Deployments' Argo CD Application\n", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```yaml\n(.*?)```", section, re.S)
    targets = sorted(
        (
            (o["metadata"]["namespace"], o["spec"]["scaleTargetRef"]["name"])
            for o in rendered_objects("prod").values()
            if o["kind"] == "HorizontalPodAutoscaler"
        ),
    )
    spec = yaml.safe_load(block)["spec"]
    assert spec["syncPolicy"] == {"syncOptions": ["RespectIgnoreDifferences=true"]}
    assert len(targets) == 3  # chat-api, embeddings, offline-scoring
    assert sorted((e["namespace"], e["name"]) for e in spec["ignoreDifferences"]) == targets
    for entry in spec["ignoreDifferences"]:
        assert (entry["group"], entry["kind"], entry["jsonPointers"]) == (
            "apps",
            "Deployment",
            ["/spec/replicas"],
        )
