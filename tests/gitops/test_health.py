"""generators/gitops/health.py's argocd-cm overrides, judged by the real Argo CD v3.5.1:
`argocd admin settings resource-overrides health` calls health.GetResourceHealth with the
overrides of the given argocd-cm (cmd/argocd/commands/admin/settings.go:503-505), the function
the sync's wave wait calls (gitops-engine/pkg/sync/sync_context.go:555).

- without the overrides, Argo CD reads staging's HPA Degraded while its Deployment is missing
  and a dashboard no grafana-operator reconciles Progressing: what would stall a sync;
- with them, the rendered (annotated) objects read Healthy;
- an object without the annotation reads exactly as Argo CD's built-in check says, for each
  condition set below (the Lua restates the built-in, so a wrong restatement fails here).
"""

from __future__ import annotations

import copy
import subprocess
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from generators.gitops import health
from generators.k8s.objects import Obj
from tests.support import ROOT, tool

from .conftest import rendered_objects

HPA = "overflow/serving-staging/horizontalpodautoscaler-chat-api.yaml"
DASHBOARD = "monitoring/monitoring/grafanadashboard-trainyard-fabric.yaml"
VALUES = ROOT / "rendered" / "staging" / "installers" / "argocd-cm-health.yaml"
NOT_FOUND = (
    'the HPA controller was unable to get the target\'s current scale: deployments.apps "chat-api" not found'
)


def _condition(type_: str, status: str, reason: str, message: str = "m") -> dict[str, str]:
    return {"type": type_, "status": status, "reason": reason, "message": message}


HPA_CONDITIONS: list[list[dict[str, str]]] = [
    [],
    [_condition("AbleToScale", "False", "FailedGetScale", NOT_FOUND)],
    [_condition("AbleToScale", "True", "SucceededGetScale")],
    [
        _condition("AbleToScale", "True", "ReadyForNewScale"),
        _condition("ScalingActive", "False", "FailedGetExternalMetric"),
    ],
    [
        _condition("ScalingActive", "True", "ValidMetricFound"),
        _condition("ScalingLimited", "True", "TooFewReplicas"),
    ],
    [_condition("ScalingActive", "False", "ScalingDisabled")],
    [_condition("ScalingActive", "False", "InvalidSelector")],
]
GRAFANA_CONDITIONS: list[list[dict[str, str]]] = [
    [],
    [_condition("DashboardSynchronized", "True", "ApplySuccessful")],
    [_condition("DashboardSynchronized", "False", "ApplyFailed")],
    [_condition("A", "True", "Ok"), _condition("B", "False", "Broken")],
]


@cache
def _empty_cm(folder: Path) -> Path:
    path = folder / "argocd-cm.yaml"
    path.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\ndata: {}\n",
        encoding="utf-8",
    )
    return path


def _write(obj: Obj, folder: Path) -> Path:
    path = folder / f"object-{abs(hash(yaml.safe_dump(obj)))}.yaml"
    path.write_text(yaml.safe_dump(obj), encoding="utf-8")
    return path


def _health(obj: Obj, cm: Path, folder: Path) -> tuple[str, str]:
    """(STATUS, MESSAGE) as the real Argo CD reads `obj` with the argocd-cm at `cm`."""
    path = _write(obj, folder)
    done = subprocess.run(
        [
            str(tool("argocd")),
            "admin",
            "settings",
            "resource-overrides",
            "health",
            str(path),
            "--argocd-cm-path",
            str(cm),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    fields = dict(
        line.split(": ", 1) for line in done.stdout.splitlines() if line.startswith(("STATUS: ", "MESSAGE: "))
    )
    return fields["STATUS"], fields.get("MESSAGE", "")


def _with(obj: Obj, conditions: list[dict[str, str]], annotated: bool) -> Obj:
    out = copy.deepcopy(obj)
    if conditions:
        out["status"] = {"conditions": conditions}
    if not annotated:
        del out["metadata"]["annotations"][health.IGNORE_HEALTHCHECK]
    return out


def _staging(path: str) -> Any:
    obj = rendered_objects("staging")[path]
    assert obj["metadata"]["annotations"][health.IGNORE_HEALTHCHECK] == "true"
    return obj


@cache
def _overrides(folder: Path) -> Path:
    """argocd-cm as the argo-cd chart makes it from the rendered values: configs.cm as data."""
    data = yaml.safe_load(VALUES.read_text(encoding="utf-8"))["configs"]["cm"]
    path = folder / "argocd-cm-with-overrides.yaml"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm", "namespace": "argocd"}}
    path.write_text(yaml.safe_dump({**cm, "data": data}), encoding="utf-8")
    return path


def test_the_rendered_overrides_are_the_modules_scripts() -> None:
    data = yaml.safe_load(VALUES.read_text(encoding="utf-8"))["configs"]["cm"]
    assert data == health.customizations()
    assert set(data) == {
        "resource.customizations.health.autoscaling_HorizontalPodAutoscaler",
        "resource.customizations.health.grafana.integreatly.org_GrafanaDashboard",
        "resource.customizations.health.grafana.integreatly.org_GrafanaFolder",
    }


def test_without_overrides_argo_cd_reads_what_would_stall_a_sync(tmp_path: Path) -> None:
    cm = _empty_cm(tmp_path)
    missing = _with(_staging(HPA), HPA_CONDITIONS[1], annotated=True)
    assert _health(missing, cm, tmp_path) == ("Degraded", NOT_FOUND)
    assert _health(_staging(DASHBOARD), cm, tmp_path)[0] == "Progressing"


def test_with_overrides_the_rendered_objects_read_healthy(tmp_path: Path) -> None:
    missing = _with(_staging(HPA), HPA_CONDITIONS[1], annotated=True)
    status, message = _health(missing, _overrides(tmp_path), tmp_path)
    assert status == "Healthy"
    assert NOT_FOUND in message
    assert _health(_staging(DASHBOARD), _overrides(tmp_path), tmp_path)[0] == "Healthy"


def _each(conditions: list[list[dict[str, str]]]) -> pytest.MarkDecorator:
    """One case per set of status conditions, named by their reasons."""
    return pytest.mark.parametrize(
        "conditions", conditions, ids=lambda c: "+".join(x["reason"] for x in c) or "none"
    )


def _keeps_argo_cds_own_health(path: str, conditions: list[dict[str, str]], tmp_path: Path) -> None:
    """Without the annotation, staging's object at `path` with `conditions` reads the same
    with our overrides as with none: Argo CD's own check decides."""
    obj = _with(_staging(path), conditions, annotated=False)
    assert _health(obj, _overrides(tmp_path), tmp_path) == _health(obj, _empty_cm(tmp_path), tmp_path)


@_each(HPA_CONDITIONS)
def test_an_hpa_without_the_annotation_keeps_argo_cds_own_health(
    tmp_path: Path, conditions: list[dict[str, str]]
) -> None:
    _keeps_argo_cds_own_health(HPA, conditions, tmp_path)


@_each(GRAFANA_CONDITIONS)
def test_a_dashboard_without_the_annotation_keeps_argo_cds_own_health(
    tmp_path: Path, conditions: list[dict[str, str]]
) -> None:
    _keeps_argo_cds_own_health(DASHBOARD, conditions, tmp_path)


def test_the_lua_templates_hold_no_jinja_delimiters() -> None:
    """Every file under templates/ is compiled as Jinja once per fleet (generators/pipeline/
    fleet.py), the Lua too: a `{{`, `{%` or `{#` in it would break every render."""
    for script in set(health.SCRIPTS.values()):
        text = (ROOT / "templates" / "argocd" / script).read_text(encoding="utf-8")
        assert not {"{{", "{%", "{#"} & {text[i : i + 2] for i in range(len(text) - 1)}, script


# Every rendered kind Argo CD v3.5.1 has a health check for, and who makes it Healthy on a
# cluster (without a status each reads Progressing). A new kind with a health check fails
# the test below until its row says who reports its health, or it joins health.py's kinds.
REPORTED_BY = {
    "APIService": "kube-aggregator (Available), once the adapter answers: wave 6, waited on",
    "Deployment": "kube-controller-manager (rollout complete)",
    "PodDisruptionBudget": "kube-controller-manager's disruption controller (InsufficientPods reads Healthy)",
    "Service": "nothing needed: Healthy unless a LoadBalancer waits for its address",
}


def test_every_kind_argo_cd_checks_the_health_of_is_reported_by_something(tmp_path: Path) -> None:
    kinds: dict[str, Obj] = {}
    for env in ("dev", "staging", "prod"):
        for path, obj in rendered_objects(env).items():
            if not path.startswith("argocd/"):
                kinds.setdefault(obj["kind"], obj)
    cm = _empty_cm(tmp_path)

    def verdict(obj: Obj) -> str:
        command = [str(tool("argocd")), "admin", "settings", "resource-overrides", "health"]
        done = subprocess.run(
            [*command, str(_write(obj, tmp_path)), "--argocd-cm-path", str(cm)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout.split("\n", 1)[0]

    with ThreadPoolExecutor(max_workers=4) as pool:  # ~30 processes of 0.3 s each
        verdicts = dict(zip(kinds, pool.map(verdict, kinds.values()), strict=True))
    checked = {k: v for k, v in verdicts.items() if not v.startswith("Health script is not configured")}
    assert set(REPORTED_BY) <= set(kinds)  # each row is a rendered kind
    assert set(checked) == (set(REPORTED_BY) | health.KINDS) & set(kinds), checked
