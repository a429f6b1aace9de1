"""Kinds whose Argo CD health no object of the environment Application provides, and how the
render keeps Argo CD from waiting on it (read against Argo CD v3.5.1's source,
../shared/src/argo-cd-3.5.1.tar.gz; file:line inside it):

- a HorizontalPodAutoscaler reads Degraded while its target Deployment does not exist
  (`AbleToScale` `FailedGetScale`) or its External metric is not served (`ScalingActive`
  `FailedGetExternalMetric`) (gitops-engine/pkg/health/health_hpa.go:108-118). The inference
  Deployments are their owners' (another Application, or nobody yet), so a Degraded HPA says
  nothing about what this Application applied;
- a GrafanaDashboard or GrafanaFolder reads Progressing until grafana-operator writes a
  condition (resource_customizations/grafana.integreatly.org/<Kind>/health.lua): for ever
  on a cluster where no grafana-operator reconciles them.

Two things keep a sync from waiting on them:
- they go in the last sync wave (generators/gitops/syncwaves.py), which Argo CD never waits
  on: after applying an operation's last wave it reports success "EVEN if those objects
  subsequently degrade" (gitops-engine/pkg/sync/sync_context.go:703-712), while an earlier
  wave waits on Progressing and fails on Degraded (:555-567, :576-595, :638);
- they carry `argocd.argoproj.io/ignore-healthcheck: "true"`, so the Application's own health
  leaves them out (controller/health.go:40-43, common/common.go:224-226) and reads Healthy
  while the inference Deployments do not exist. The annotation does not reach the sync: the
  wave wait reads health.GetResourceHealth alone (sync_context.go:555), hence the wave.

What the wave cannot cover: with `PruneLast=true` a sync that prunes moves the prunes to a
wave after the last (sync_context.go:1127-1143), so the last wave is then waited on. For that,
`customizations()` gives argocd-cm health overrides (rendered as an installer input by
generators/components/argocd.py): an object of these kinds carrying the annotation reads
Healthy, every other one keeps Argo CD's built-in check, restated in Lua. Argo CD reads an
argocd-cm health script before its built-in one (util/lua/lua.go:169-205) and the sync asks
the same function (sync_context.go:555), so with them no wave waits on these objects.
"""

from __future__ import annotations

from string import Template
from typing import Any

from generators.output.templating import TEMPLATE_DIR

IGNORE_HEALTHCHECK = "argocd.argoproj.io/ignore-healthcheck"

# (group, kind) -> what its health waits for, which this Application does not apply.
HEALTH_FROM_ELSEWHERE: dict[tuple[str, str], str] = {
    (
        "autoscaling",
        "HorizontalPodAutoscaler",
    ): "its target Deployment (the inference owner's) and its metric",
    ("grafana.integreatly.org", "GrafanaDashboard"): "a grafana-operator and a Grafana it matches",
    ("grafana.integreatly.org", "GrafanaFolder"): "a grafana-operator and a Grafana it matches",
}
KINDS = frozenset(kind for _, kind in HEALTH_FROM_ELSEWHERE)
# The Lua that overrides each kind's health in argocd-cm (templates/argocd/).
SCRIPTS = {
    ("autoscaling", "HorizontalPodAutoscaler"): "health-hpa.lua",
    ("grafana.integreatly.org", "GrafanaDashboard"): "health-grafana.lua",
    ("grafana.integreatly.org", "GrafanaFolder"): "health-grafana.lua",
}


def health_from_elsewhere(obj: dict[str, Any]) -> bool:
    return (obj["apiVersion"].rpartition("/")[0], obj["kind"]) in HEALTH_FROM_ELSEWHERE


def mark(obj: dict[str, Any]) -> None:
    """Leave `obj` out of the Application's health if its health is not the Application's."""
    if health_from_elsewhere(obj):
        obj.setdefault("metadata", {}).setdefault("annotations", {})[IGNORE_HEALTHCHECK] = "true"


def customizations() -> dict[str, str]:
    """argocd-cm data: `resource.customizations.health.<group>_<kind>` -> Lua script, the key
    form util/lua/lua.go:476-484 (GetConfigMapKey) looks up and argocd-cm documents."""
    return {
        f"resource.customizations.health.{group}_{kind}": Template(
            (TEMPLATE_DIR / "argocd" / SCRIPTS[(group, kind)]).read_text(encoding="utf-8")
        ).substitute(annotation=IGNORE_HEALTHCHECK)
        for group, kind in sorted(HEALTH_FROM_ELSEWHERE)
    }
