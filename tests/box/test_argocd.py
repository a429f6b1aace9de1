"""box/argocd.py without a cluster: what the box takes from upstream's install manifests, the
cluster Secret it declares, the Timeline it records. Expected values are upstream's
manifests/core-install.yaml of v3.5.1 (names and labels, as literals) and Argo CD's
declarative-setup format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from box import argocd
from box.kube import Obj
from tests.support import ROOT
from tools.toolchain import ToolNotInstalled


@pytest.fixture(scope="module")
def upstream() -> list[Obj]:
    try:
        return argocd.upstream_objects("gitops", {"timeout.reconciliation": "60s"})
    except ToolNotInstalled as err:
        pytest.skip(str(err))


def test_only_the_controller_and_repo_server_rbac_and_the_shared_config_are_kept(
    upstream: list[Obj],
) -> None:
    kept = sorted((o["kind"], o["metadata"]["name"]) for o in upstream)
    assert kept == [
        ("ClusterRole", "argocd-application-controller"),
        ("ClusterRoleBinding", "argocd-application-controller"),
        ("ConfigMap", "argocd-cm"),
        ("ConfigMap", "argocd-cmd-params-cm"),
        ("ConfigMap", "argocd-gpg-keys-cm"),
        ("ConfigMap", "argocd-rbac-cm"),
        ("ConfigMap", "argocd-ssh-known-hosts-cm"),
        ("ConfigMap", "argocd-tls-certs-cm"),
        ("Role", "argocd-application-controller"),
        ("RoleBinding", "argocd-application-controller"),
        ("Secret", "argocd-secret"),
        ("ServiceAccount", "argocd-application-controller"),
        ("ServiceAccount", "argocd-repo-server"),
    ]


def test_objects_are_placed_in_the_namespace_and_settings_reach_argocd_cm(
    upstream: list[Obj],
) -> None:
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in upstream}
    binding = by_name[("ClusterRoleBinding", "argocd-application-controller")]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "argocd-application-controller", "namespace": "gitops"}
    ]
    assert "namespace" not in binding["metadata"]
    assert by_name[("Role", "argocd-application-controller")]["metadata"]["namespace"] == "gitops"
    cm = by_name[("ConfigMap", "argocd-cm")]["data"]
    assert cm["timeout.reconciliation"] == "60s"
    # upstream's own data stays (its resource exclusions, e.g. Endpoints)
    assert "EndpointSlice" in cm["resource.exclusions"]
    assert set(by_name[("Secret", "argocd-secret")]["stringData"]) == {"server.secretkey"}


def test_the_cluster_secret_is_argo_cds_declarative_format() -> None:
    secret = argocd.cluster_secret("argocd", "staging", "https://127.0.0.1:6443", "tok", b"PEM")
    assert secret["metadata"]["labels"] == {"argocd.argoproj.io/secret-type": "cluster"}
    assert secret["stringData"]["server"] == "https://127.0.0.1:6443"
    assert json.loads(secret["stringData"]["config"]) == {
        "bearerToken": "tok",
        "tlsClientConfig": {"caData": "UEVN"},  # base64 of PEM
    }


def test_a_timeline_records_transitions_only(tmp_path: Path) -> None:
    timeline = argocd.Timeline(tmp_path / "t.jsonl")
    resource = {"group": "kueue.x-k8s.io", "kind": "ClusterQueue", "name": "evals", "status": "OutOfSync"}
    app = {
        "status": {"sync": {"status": "OutOfSync"}, "health": {"status": "Missing"}, "resources": [resource]}
    }
    timeline(app)
    timeline(app)  # nothing changed: no record
    resource["status"] = "Synced"
    timeline(app)
    began, records = argocd.read_timeline(tmp_path / "t.jsonl")
    assert began > 0
    assert [sorted(changed) for _, changed in records] == [
        ["", "kueue.x-k8s.io/ClusterQueue evals"],
        ["kueue.x-k8s.io/ClusterQueue evals"],
    ]
    assert records[1][1]["kueue.x-k8s.io/ClusterQueue evals"] == ["Synced", "", ""]


def _result(kind: str, name: str, status: str, group: str = "kueue.x-k8s.io") -> dict[str, str]:
    return {"group": group, "version": "v1beta2", "kind": kind, "name": name, "status": status}


def test_an_operation_reads_prunes_in_argo_cds_order() -> None:
    """status.operationState as Argo CD v3.5.1 writes it (controller/sync.go:391: the results
    in the order they were first set); a prune listed before an applied object is reported,
    one listed after every applied object is not."""
    state = {
        "phase": "Succeeded",
        "message": "successfully synced (all tasks run)",
        "startedAt": "2026-12-04T23:53:35Z",
        "operation": {"initiatedBy": {"automated": True}, "sync": {"revision": "abc"}},
        "syncResult": {
            "revision": "abc",
            "resources": [
                _result("ResourceFlavor", "train-h100-v2", "Synced"),
                _result("ClusterQueue", "foundation", "Synced"),
                _result("ResourceFlavor", "train-h100", "Pruned"),
                {**_result("Namespace", "evals", "Pruned", group=""), "version": "v1"},
            ],
        },
    }
    last = argocd.Operation.of(state)
    assert last.with_status("Pruned") == ["kueue.x-k8s.io/ResourceFlavor train-h100", "core/Namespace evals"]
    assert last.pruned_before_applied() == []
    assert last.line() == (
        "2026-12-04T23:53:35Z (automated): Succeeded, 0 retries, 2 applied, then 2 pruned: "
        "successfully synced (all tasks run)"
    )
    resources = state["syncResult"]["resources"]  # type: ignore[index]
    early = argocd.Operation.of({**state, "syncResult": {"resources": [resources[2], *resources[:2]]}})
    assert early.pruned_before_applied() == [
        "kueue.x-k8s.io/ResourceFlavor train-h100 pruned before kueue.x-k8s.io/ResourceFlavor train-h100-v2 "
        "was applied"
    ]


def test_a_self_heal_operation_names_what_it_was_limited_to() -> None:
    """The partial sync selfHeal starts names only the objects not Synced
    (controller/appcontroller.go:2418-2427): group, kind and name, no namespace."""
    state = {
        "phase": "Succeeded",
        "message": "successfully synced (all tasks run)",
        "startedAt": "2026-12-04T23:53:55Z",
        "operation": {
            "initiatedBy": {"automated": True},
            "sync": {"resources": [{"group": "", "kind": "Namespace", "name": "evals"}]},
        },
        "syncResult": {"resources": [{**_result("Namespace", "evals", "Pruned", group=""), "version": "v1"}]},
    }
    assert argocd.Operation.of(state).line() == (
        "2026-12-04T23:53:55Z (automated, selfHeal limited to core/Namespace evals): Succeeded, 0 retries, "
        "0 applied, then 1 pruned: successfully synced (all tasks run)"
    )


def test_the_sync_a_person_presses_is_the_api_servers_operation() -> None:
    """What `box up prod --argocd` sets on prod's manual Application: the operation Argo CD
    v3.5.1's API server builds for `argocd app sync` (server/application/application.go
    2120-2174): the source at its targetRevision, the Application's syncOptions and retry,
    no prune, a user's name."""
    app = yaml.safe_load((ROOT / "rendered/prod/argocd/argocd/application-trainyard-prod.yaml").read_text())
    assert "automated" not in app["spec"]["syncPolicy"]  # environments/prod.yaml: manual
    operation = argocd.sync_operation(app)
    assert operation["initiatedBy"] == {"username": "trainyard-box"}
    assert operation["sync"]["revision"] == "main"
    assert operation["sync"]["syncOptions"] == [
        "ApplyOutOfSyncOnly=true",
        "PruneLast=true",
        "RespectIgnoreDifferences=true",
    ]
    assert "prune" not in operation["sync"]
    assert operation["retry"] == {
        "limit": 5,
        "backoff": {"duration": "10s", "factor": 2, "maxDuration": "3m"},
    }
    assert argocd.sync_operation(app, retry={"limit": 0})["retry"] == {"limit": 0}
