"""Each policy: a small break of a copied rendered tree makes `validate` exit 1 with the
expected line, and nothing else but the staleness findings the edit itself causes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from generators import yamlemit

from .conftest import Repo, Run, hardened_deployment, meta

Validate = Callable[..., Run]
DEV = "rendered/dev"
STAGING = "rendered/staging"


def problems(run: Run) -> list[str]:
    """Finding lines other than staleness (every fixture edits a rendered file)."""
    return [line for line in run.lines
            if line.startswith(("rendered/", "environments/")) and ": stale: " not in line]


def expect(run: Run, *lines: str) -> None:
    assert run.code == 1, run.out
    assert problems(run) == sorted(lines), run.out


# quota-conservation ----------------------------------------------------------------------

def test_quota_above_pool_capacity(repo: Repo, validate: Validate) -> None:
    def grow(cq: dict[str, Any]) -> None:
        cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "10"

    repo.edit(f"{DEV}/kueue/clusterqueue-platform.yaml", grow)
    expect(validate(repo.root, "dev"),
           f"{DEV}/kueue/resourceflavor-dev-a100.yaml: ResourceFlavor/dev-a100: quota-conservation: "
           "nvidia.com/gpu: nominal quotas sum to 18, above the 16 that 4 schedulable nodes of pool "
           "dev-a100 back (ClusterQueue platform 10, ClusterQueue sandbox 8)")


def test_cohort_quota_counts(repo: Repo, validate: Validate) -> None:
    def lend(cohort: dict[str, Any]) -> None:
        cohort["spec"] = {"resourceGroups": [{
            "coveredResources": ["cpu"],
            "flavors": [{"name": "dev-a100", "resources": [{"name": "cpu", "nominalQuota": "1"}]}],
        }]}

    repo.edit(f"{DEV}/kueue/cohort-dev.yaml", lend)
    expect(validate(repo.root, "dev"),
           f"{DEV}/kueue/resourceflavor-dev-a100.yaml: ResourceFlavor/dev-a100: quota-conservation: "
           "cpu: nominal quotas sum to 385, above the 384 that 4 schedulable nodes of pool dev-a100 "
           "back (ClusterQueue platform 192, ClusterQueue sandbox 192, Cohort dev 1)")


# references ------------------------------------------------------------------------------

def test_local_queue_names_missing_cluster_queue(repo: Repo, validate: Validate) -> None:
    repo.edit(f"{DEV}/kueue/sandbox/localqueue-sandbox.yaml",
              lambda lq: lq["spec"].update(clusterQueue="sandbx"))
    expect(validate(repo.root, "dev"),
           f"{DEV}/kueue/sandbox/localqueue-sandbox.yaml: LocalQueue/sandbox: references: "
           "spec.clusterQueue names ClusterQueue 'sandbx', which this environment does not render "
           "(known: platform, sandbox)")


def test_covered_resources_order(repo: Repo, validate: Validate) -> None:
    def swap(cq: dict[str, Any]) -> None:
        resources = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        resources[1], resources[2] = resources[2], resources[1]

    repo.edit(f"{DEV}/kueue/clusterqueue-platform.yaml", swap)
    expect(validate(repo.root, "dev"),
           f"{DEV}/kueue/clusterqueue-platform.yaml: ClusterQueue/platform: references: "
           "spec.resourceGroups[0].flavors[0].resources lists ['nvidia.com/gpu', 'memory', 'cpu'] "
           "but coveredResources is ['nvidia.com/gpu', 'cpu', 'memory']: Kueue requires the same "
           "resources in the same order")


def test_missing_flavor_and_priority_classes(repo: Repo, validate: Validate) -> None:
    (repo.root / DEV / "kueue/resourceflavor-dev-a100.yaml").unlink()
    deployment = hardened_deployment("batch", "sandbox")
    pod = deployment["spec"]["template"]
    pod["spec"]["priorityClassName"] = "training-urgent"
    pod["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "inference-bulk"
    repo.write(f"{DEV}/fixture/sandbox/deployment-batch.yaml", deployment)
    known = "(known: inference-batch, inference-prod, training, training-critical)"
    ref = f"{DEV}/kueue/clusterqueue-%s.yaml: ClusterQueue/%s: references: spec.resourceGroups[0]" \
          ".flavors[0].name names ResourceFlavor 'dev-a100', which this environment does not render"
    where = f"{DEV}/fixture/sandbox/deployment-batch.yaml: Deployment/batch: references: "
    run = validate(repo.root, "dev")
    expect(run, ref % ("platform", "platform"), ref % ("sandbox", "sandbox"),
           f"{where}spec.template.spec.priorityClassName names PriorityClass 'training-urgent', "
           f"which this environment does not render {known}",
           f"{where}spec.template.metadata.labels[kueue.x-k8s.io/priority-class] names "
           f"WorkloadPriorityClass 'inference-bulk', which this environment does not render {known}")
    # quota conservation still sees the quota, now held by a flavor that is not rendered
    assert run.findings("quota-conservation") == []


# priorities ------------------------------------------------------------------------------

def test_inference_above_training(repo: Repo, validate: Validate) -> None:
    repo.edit(f"{DEV}/priorities/workloadpriorityclass-inference-prod.yaml",
              lambda wpc: wpc.update(value=600))
    expect(validate(repo.root, "dev"),
           f"{DEV}/priorities/workloadpriorityclass-inference-prod.yaml: "
           "WorkloadPriorityClass/inference-prod: priorities: inference tier value 600 is not below "
           "training tier 'training' (500): training must preempt inference, not the reverse")


def test_priority_limits_and_uniqueness(repo: Repo, validate: Validate) -> None:
    repo.edit(f"{DEV}/priorities/priorityclass-training-critical.yaml",
              lambda pc: pc.update(value=2_000_000_000))
    repo.edit(f"{DEV}/priorities/priorityclass-inference-batch.yaml",
              lambda pc: pc.update(value=100000))
    prefix = f"{DEV}/priorities/priorityclass-"
    expect(validate(repo.root, "dev"),
           f"{prefix}training-critical.yaml: PriorityClass/training-critical: priorities: "
           "value 2000000000 is outside [-2147483648, 1000000000]",
           f"{prefix}inference-prod.yaml: PriorityClass/inference-prod: priorities: value 100000 "
           "equals PriorityClass 'inference-batch': equal tiers cannot preempt each other")


# taints ----------------------------------------------------------------------------------

def test_no_execute_taint_and_instant_toleration(repo: Repo, validate: Validate) -> None:
    def taint(flavor: dict[str, Any]) -> None:
        flavor["spec"]["nodeTaints"] = [{"key": "trainyard.dev/drain", "effect": "NoExecute"}]
        flavor["spec"]["tolerations"] = [{"key": "trainyard.dev/drain", "operator": "Exists",
                                          "effect": "NoExecute", "tolerationSeconds": 0}]

    repo.edit(f"{DEV}/kueue/resourceflavor-dev-a100.yaml", taint)
    where = f"{DEV}/kueue/resourceflavor-dev-a100.yaml: ResourceFlavor/dev-a100: taints: "
    expect(validate(repo.root, "dev"),
           f"{where}spec.nodeTaints[0]: NoExecute taint 'trainyard.dev/drain' evicts every running "
           "pod without a toleration at once; use NoSchedule",
           f"{where}spec.tolerations[0]: NoExecute toleration with tolerationSeconds 0 evicts its "
           "pods the moment the taint lands")


def _gate_keys(root: Path, env: str) -> list[str]:
    """Gate taint keys of the TaintPolicy the overflow component renders (read independently)."""
    keys = []
    for path in sorted((root / "rendered" / env).rglob("configmap-*.yaml")):
        for text in (yaml.safe_load(path.read_text()).get("data") or {}).values():
            document = yaml.safe_load(text) if isinstance(text, str) else None
            if isinstance(document, dict) and document.get("kind") == "TaintPolicy":
                keys += [gate["taint"]["key"] for gate in document["spec"]["gates"]]
    return sorted(set(keys))


def test_inference_tolerates_gate_taint(repo: Repo, validate: Validate) -> None:
    keys = _gate_keys(repo.root, "staging")
    assert keys, "staging renders an overflow TaintPolicy"
    toleration = [{"key": keys[0], "operator": "Exists", "effect": "NoSchedule"}]
    serving = hardened_deployment("server", "serving-staging", "staging")  # an inference team
    serving["spec"]["template"]["spec"]["tolerations"] = toleration
    repo.write(f"{STAGING}/fixture/serving-staging/deployment-server.yaml", serving)
    batch = hardened_deployment("batch", "research", "staging")  # a training namespace ...
    batch["spec"]["template"]["spec"]["priorityClassName"] = "inference-batch"  # ... inference tier
    batch["spec"]["template"]["spec"]["tolerations"] = [{"operator": "Exists"}]
    repo.write(f"{STAGING}/fixture/research/deployment-batch.yaml", batch)
    allowed = hardened_deployment("trainer", "research", "staging")  # training may tolerate it
    allowed["spec"]["template"]["spec"]["tolerations"] = toleration
    repo.write(f"{STAGING}/fixture/research/deployment-trainer.yaml", allowed)
    expect(validate(repo.root, "staging"),
           f"{STAGING}/fixture/serving-staging/deployment-server.yaml: Deployment/server: taints: "
           "spec.template.spec.tolerations[0]: inference namespace serving-staging tolerates the "
           f"overflow gate taint {keys[0]!r}; it would bypass the gate",
           f"{STAGING}/fixture/research/deployment-batch.yaml: Deployment/batch: taints: "
           "spec.template.spec.tolerations[0]: inference workload (tier inference-batch) tolerates "
           f"every taint, including the overflow gate taint {', '.join(map(repr, keys))}; it would "
           "bypass the gate")


def test_gate_key_comes_from_the_rendered_taint_policy(repo: Repo, validate: Validate) -> None:
    """dev renders no TaintPolicy: tolerating a key is harmless until one names it."""
    batch = hardened_deployment("batch", "sandbox")
    batch["spec"]["template"]["spec"]["priorityClassName"] = "inference-batch"
    batch["spec"]["template"]["spec"]["tolerations"] = [{"key": "example.com/gate", "operator": "Exists"}]
    repo.write(f"{DEV}/fixture/sandbox/deployment-batch.yaml", batch)
    assert problems(validate(repo.root, "dev")) == []
    policy = {"apiVersion": "trainyard.dev/v1alpha1", "kind": "TaintPolicy",
              "spec": {"gates": [{"name": "g", "taint": {"key": "example.com/gate",
                                                         "effect": "NoSchedule"}}]}}
    repo.write(f"{DEV}/fixture/sandbox/configmap-gate.yaml", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("gate", "fixture", 4, "sandbox"),
        "data": {"policy.yaml": yamlemit.dump(policy)}})
    expect(validate(repo.root, "dev"),
           f"{DEV}/fixture/sandbox/deployment-batch.yaml: Deployment/batch: taints: "
           "spec.template.spec.tolerations[0]: inference workload (tier inference-batch) tolerates "
           "the overflow gate taint 'example.com/gate'; it would bypass the gate")


# rbac ------------------------------------------------------------------------------------

def _rbac(kind: str, name: str, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
            "metadata": meta(name, "fixture", 4, namespace), **body}


def test_rbac(repo: Repo, validate: Validate) -> None:
    base = f"{DEV}/fixture"
    repo.write(f"{base}/clusterrole-everything.yaml", _rbac("ClusterRole", "everything", {
        "rules": [{"apiGroups": ["*"], "resources": ["pods"], "verbs": ["*"]}]}))
    repo.write(f"{base}/clusterrolebinding-admin.yaml", _rbac("ClusterRoleBinding", "admin", {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "gate", "namespace": "sandbox"}]}))
    repo.write(f"{base}/sandbox/role-secrets.yaml", _rbac("Role", "secrets", {
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}, "sandbox"))
    repo.write(f"{base}/sandbox/rolebinding-secrets.yaml", _rbac("RoleBinding", "secrets", {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "secrets"},
        "subjects": [{"kind": "ServiceAccount", "name": "exporter", "namespace": "sandbox"},
                     {"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]},
        "sandbox"))
    binding = f"{base}/sandbox/rolebinding-secrets.yaml: RoleBinding/secrets: rbac: Role secrets can "
    role = f"{base}/clusterrole-everything.yaml: ClusterRole/everything: rbac: rules[0]."
    expect(validate(repo.root, "dev"),
           f"{role}verbs contains a wildcard; list what is needed",
           f"{role}apiGroups contains a wildcard; list what is needed",
           f"{base}/clusterrolebinding-admin.yaml: ClusterRoleBinding/admin: rbac: binds cluster-admin; "
           "grant the verbs and resources the subject needs",
           f"{binding}read Secrets and is bound to ServiceAccount 'exporter', which is not in "
           "SECRET_READERS['fixture'] (policies/rbac.py)",
           f"{binding}read Secrets and is bound to Group 'devs'; only ServiceAccounts in "
           "policies/rbac.py SECRET_READERS may read Secrets")


# workloads -------------------------------------------------------------------------------

def test_workload_hardening(repo: Repo, validate: Validate) -> None:
    deployment = hardened_deployment("exporter", "sandbox")
    pod = deployment["spec"]["template"]["spec"]
    del pod["securityContext"]
    container = pod["containers"][0]
    container["image"] = "ghcr.io/example/exporter:latest"
    container["securityContext"] = {"allowPrivilegeEscalation": True}
    container["resources"] = {"requests": {"cpu": "100m"}}
    repo.write(f"{DEV}/fixture/sandbox/deployment-exporter.yaml", deployment)
    cronjob: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta("sync", "fixture", 5, "sandbox"),
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {
            "spec": {**hardened_deployment("sync", "sandbox")["spec"]["template"]["spec"],
                     "restartPolicy": "OnFailure"}}}}},
    }
    cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox"
    repo.write(f"{DEV}/fixture/sandbox/cronjob-sync.yaml", cronjob)
    where = (f"{DEV}/fixture/sandbox/deployment-exporter.yaml: Deployment/exporter: workloads: "
             "spec.template.spec.containers[0] (exporter): ")
    expect(validate(repo.root, "dev"),
           f"{where}securityContext.runAsNonRoot must be true",
           f"{where}securityContext.allowPrivilegeEscalation must be false",
           f"{where}securityContext.readOnlyRootFilesystem must be true (mount an emptyDir for scratch)",
           f"{where}resources need requests.memory, limits.memory",
           f"{where}image 'ghcr.io/example/exporter:latest' uses :latest; pin a version tag or digest",
           f"{DEV}/fixture/sandbox/cronjob-sync.yaml: CronJob/sync: workloads: spec.jobTemplate.spec"
           ".template.spec.containers[0] (sync): image 'busybox' has no tag and pulls :latest; pin a "
           "version tag or digest")


def test_hardened_workload_passes(repo: Repo, validate: Validate) -> None:
    deployment = hardened_deployment("exporter", "sandbox")
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = (
        "ghcr.io/example/exporter@sha256:" + "0" * 64)
    repo.write(f"{DEV}/fixture/sandbox/deployment-exporter.yaml", deployment)
    run = validate(repo.root, "dev")
    assert problems(run) == [], run.out
    assert run.findings("stale") == [
        f"{DEV}/fixture/sandbox/deployment-exporter.yaml: Deployment/exporter: stale: "
        "environments/dev.yaml does not render it; run: python generate.py render dev"]


# size ------------------------------------------------------------------------------------

def _configmap(name: str, data_bytes: int, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    metadata = meta(name, "fixture", 4, "sandbox")
    metadata["annotations"].update(annotations or {})
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata,
            "data": {"blob.txt": "x" * data_bytes}}


def test_size(repo: Repo, validate: Validate) -> None:
    base = f"{DEV}/fixture/sandbox"
    repo.write(f"{base}/configmap-big.yaml", _configmap("big", 300_000))
    ssa = {"argocd.argoproj.io/sync-options": "ServerSideApply=true"}
    repo.write(f"{base}/configmap-big-ssa.yaml", _configmap("big-ssa", 300_000, ssa))
    repo.write(f"{base}/configmap-huge.yaml", _configmap("huge", 1_100_000, ssa))
    run = validate(repo.root, "dev")
    size = 300_000 + len(json.dumps(repo.load(f"{base}/configmap-big.yaml"), separators=(",", ":"))) \
        - 300_000
    expect(run,
           f"{base}/configmap-big.yaml: ConfigMap/big: size: {size:,} bytes serialized, over the "
           "262,144-byte annotation limit of client-side apply; annotate "
           "argocd.argoproj.io/sync-options: ServerSideApply=true or split it",
           f"{base}/configmap-huge.yaml: ConfigMap/huge: size: data is 1,100,008 bytes; a ConfigMap "
           "holds less than 1,048,576 (1 MiB)")


# names -----------------------------------------------------------------------------------

def test_names_and_labels(repo: Repo, validate: Validate) -> None:
    repo.edit(f"{DEV}/namespaces/namespace-sandbox.yaml",
              lambda ns: ns["metadata"]["labels"].update({"trainyard.dev/owner": "x" * 64}))
    bad = hardened_deployment("Exporter", "sandbox")
    repo.write(f"{DEV}/fixture/sandbox/deployment-Exporter.yaml", bad)
    expect(validate(repo.root, "dev"),
           f"{DEV}/namespaces/namespace-sandbox.yaml: Namespace/sandbox: names: "
           "metadata.labels[trainyard.dev/owner]: label value is 64 characters, more than 63",
           f"{DEV}/fixture/sandbox/deployment-Exporter.yaml: Deployment/Exporter: names: "
           "metadata.name 'Exporter' is not a DNS-1123 subdomain (<= 253)")


def _dashboards(name: str, *uids: str) -> dict[str, Any]:
    data = {f"{uid[:20]}.json": json.dumps({"uid": uid, "title": uid, "panels": [],
                                            "schemaVersion": 41}) for uid in uids}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": meta(name, "fixture", 4, "sandbox"), "data": data}


def test_dashboard_uids(repo: Repo, validate: Validate) -> None:
    long_uid = "gpu-fleet-utilization-by-team-and-pool-v2"
    repo.write(f"{DEV}/fixture/sandbox/configmap-dashboards-a.yaml",
               _dashboards("dashboards-a", "kueue-queues", long_uid))
    repo.write(f"{DEV}/fixture/sandbox/grafanadashboard-queues.yaml", {
        "apiVersion": "grafana.integreatly.org/v1beta1", "kind": "GrafanaDashboard",
        "metadata": meta("queues", "fixture", 5, "sandbox"),
        "spec": {"instanceSelector": {"matchLabels": {"dashboards": "grafana"}},
                 "json": json.dumps({"uid": "kueue-queues", "title": "Queues", "panels": []})},
    })
    a = f"{DEV}/fixture/sandbox/configmap-dashboards-a.yaml"
    expect(validate(repo.root, "dev"),
           f"{a}: ConfigMap/dashboards-a: names: data[gpu-fleet-utilizatio.json].uid '{long_uid}': a "
           "Grafana dashboard UID is 1..40 characters of [A-Za-z0-9_-]",
           f"{DEV}/fixture/sandbox/grafanadashboard-queues.yaml: GrafanaDashboard/queues: names: "
           f"spec.json.uid 'kueue-queues' is also the UID of ConfigMap/dashboards-a ({a}): "
           "Grafana keeps one")


# sync-waves ------------------------------------------------------------------------------

def test_sync_waves(repo: Repo, validate: Validate) -> None:
    repo.edit(f"{DEV}/kueue/sandbox/localqueue-sandbox.yaml",
              lambda lq: lq["metadata"]["annotations"].update({"argocd.argoproj.io/sync-wave": "2"}))
    repo.edit(f"{DEV}/kueue/platform-dev/localqueue-platform.yaml",
              lambda lq: lq["metadata"]["annotations"].update({"argocd.argoproj.io/sync-wave": "0"}))
    repo.edit(f"{DEV}/kueue/kueue-system/configmap-kueue-manager-config.yaml",
              lambda cm: cm["metadata"].pop("annotations"))
    lq = f"{DEV}/kueue/%s/localqueue-%s.yaml: LocalQueue/%s: sync-waves: "
    expect(validate(repo.root, "dev"),
           (lq % ("sandbox", "sandbox", "sandbox")) + "sync wave 2 is not after ClusterQueue "
           "'platform' (wave 2): ClusterQueue must be applied before LocalQueue",
           (lq % ("platform-dev", "platform", "platform")) + "sync wave 0 is not after ClusterQueue "
           "'platform' (wave 2): ClusterQueue must be applied before LocalQueue",
           (lq % ("platform-dev", "platform", "platform")) + "sync wave 0 is not after its Namespace "
           "'platform-dev' (wave 0)",
           f"{DEV}/kueue/kueue-system/configmap-kueue-manager-config.yaml: "
           "ConfigMap/kueue-manager-config: sync-waves: annotation argocd.argoproj.io/sync-wave "
           "is missing")


# kueue-rules -----------------------------------------------------------------------------

def test_kueue_cel_rules(repo: Repo, validate: Validate) -> None:
    def break_queue(cq: dict[str, Any]) -> None:
        cq["spec"].pop("cohortName")
        cq["spec"]["preemption"] = {"reclaimWithinCohort": "Never",
                                    "borrowWithinCohort": {"policy": "LowerPriority"}}

    repo.edit(f"{DEV}/kueue/clusterqueue-sandbox.yaml", break_queue)
    repo.edit(f"{DEV}/kueue/clusterqueue-platform.yaml", lambda cq: cq["spec"]["resourceGroups"][0][
        "flavors"][0]["resources"][0].update(lendingLimit="9"))
    repo.edit(f"{DEV}/kueue/resourceflavor-dev-a100.yaml", lambda rf: rf["spec"].update(
        tolerations=[{"operator": "Equal", "effect": "NoSchedule", "tolerationSeconds": 5}]))
    cells = "spec.resourceGroups[0].flavors[0].resources"
    sandbox = f"{DEV}/kueue/clusterqueue-sandbox.yaml: ClusterQueue/sandbox: kueue-rules: "
    flavor = f"{DEV}/kueue/resourceflavor-dev-a100.yaml: ResourceFlavor/dev-a100: kueue-rules: "
    expect(validate(repo.root, "dev"),
           *(f"{sandbox}{cells}[{i}].borrowingLimit needs spec.cohortName: limits only apply within "
             "a cohort" for i in range(3)),
           f"{sandbox}preemption.reclaimWithinCohort Never forbids borrowWithinCohort.policy "
           "LowerPriority",
           f"{DEV}/kueue/clusterqueue-platform.yaml: ClusterQueue/platform: kueue-rules: {cells}[0]"
           ".lendingLimit 9 is above nominalQuota 8",
           f"{flavor}spec.tolerations[0]: an empty key needs operator Exists",
           f"{flavor}spec.tolerations[0]: tolerationSeconds needs effect NoExecute")


def test_topology_levels(repo: Repo, validate: Validate) -> None:
    def shuffle(topology: dict[str, Any]) -> None:
        labels = ["kubernetes.io/hostname", "example.com/rack", "example.com/rack"]
        topology["spec"]["levels"] = [{"nodeLabel": label} for label in labels]

    repo.edit(f"{STAGING}/kueue/topology-train-h100.yaml", shuffle)
    where = f"{STAGING}/kueue/topology-train-h100.yaml: Topology/train-h100: kueue-rules: spec.levels"
    expect(validate(repo.root, "staging"),
           f"{where} repeats example.com/rack; levels must be unique",
           f"{where}: kubernetes.io/hostname can only be the last (lowest) level")
