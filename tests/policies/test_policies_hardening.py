"""Policies about safety and limits (taints, rbac, workloads, size, names): a small break of
a copied rendered tree makes `validate` exit 1 with the expected line, and nothing else
but the staleness findings the edit itself causes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from generators.output import yamlemit

from .conftest import DEV, STAGING, Repo, Validate, expect, hardened_deployment, meta, problems

# taints ----------------------------------------------------------------------------------


def test_no_execute_taint_and_instant_toleration(repo: Repo, validate: Validate) -> None:
    def taint(flavor: dict[str, Any]) -> None:
        flavor["spec"]["nodeTaints"] = [{"key": "trainyard.dev/drain", "effect": "NoExecute"}]
        flavor["spec"]["tolerations"] = [
            {
                "key": "trainyard.dev/drain",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 0,
            }
        ]

    repo.edit(f"{DEV}/kueue/resourceflavor-dev-a100.yaml", taint)
    where = f"{DEV}/kueue/resourceflavor-dev-a100.yaml: ResourceFlavor/dev-a100: taints: "
    expect(
        validate(repo.root, "dev"),
        f"{where}spec.nodeTaints[0]: NoExecute taint 'trainyard.dev/drain' evicts every running "
        "pod without a toleration at once; use NoSchedule",
        f"{where}spec.tolerations[0]: NoExecute toleration with tolerationSeconds 0 evicts its "
        "pods the moment the taint lands",
    )


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
    expect(
        validate(repo.root, "staging"),
        f"{STAGING}/fixture/serving-staging/deployment-server.yaml: Deployment/server: taints: "
        "spec.template.spec.tolerations[0]: inference namespace serving-staging tolerates the "
        f"overflow gate taint {keys[0]!r}; it would bypass the gate",
        f"{STAGING}/fixture/research/deployment-batch.yaml: Deployment/batch: taints: "
        "spec.template.spec.tolerations[0]: inference workload (tier inference-batch) tolerates "
        f"every taint, including the overflow gate taint {', '.join(map(repr, keys))}; it would "
        "bypass the gate",
    )


def test_gate_key_comes_from_the_rendered_taint_policy(repo: Repo, validate: Validate) -> None:
    """dev renders no TaintPolicy: tolerating a key is harmless until one names it."""
    batch = hardened_deployment("batch", "sandbox")
    batch["spec"]["template"]["spec"]["priorityClassName"] = "inference-batch"
    batch["spec"]["template"]["spec"]["tolerations"] = [{"key": "example.com/gate", "operator": "Exists"}]
    repo.write(f"{DEV}/fixture/sandbox/deployment-batch.yaml", batch)
    assert problems(validate(repo.root, "dev")) == []
    policy = {
        "apiVersion": "trainyard.dev/v1alpha1",
        "kind": "TaintPolicy",
        "spec": {"gates": [{"name": "g", "taint": {"key": "example.com/gate", "effect": "NoSchedule"}}]},
    }
    repo.write(
        f"{DEV}/fixture/sandbox/configmap-gate.yaml",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta("gate", "fixture", 4, "sandbox"),
            "data": {"policy.yaml": yamlemit.dump(policy)},
        },
    )
    expect(
        validate(repo.root, "dev"),
        f"{DEV}/fixture/sandbox/deployment-batch.yaml: Deployment/batch: taints: "
        "spec.template.spec.tolerations[0]: inference workload (tier inference-batch) tolerates "
        "the overflow gate taint 'example.com/gate'; it would bypass the gate",
    )


# gate-query ------------------------------------------------------------------------------

GATE_CONFIG_MAP = f"{STAGING}/overflow/trainyard-system/configmap-overflow-gate-policy.yaml"
GATE_QUERY = f"{GATE_CONFIG_MAP}: ConfigMap/overflow-gate-policy: gate-query: data[policy.yaml].spec.query: "
# Said of a query that does not count only the inference pools' nodes (the old default, a training pool)
UNRESTRICTED = (
    f"{GATE_QUERY}counts node capacity without restricting nodes to pools inference can use "
    "(infer-l40s): join with `and on (node) max by (node) (kube_node_labels{...})` of those "
    "pools' nodeLabels"
)
# The gate's default query as it once was: every non-virtual GPU, and `or vector(0)` for no pods.
OLD_DEFAULT = (
    'sum(kube_node_status_allocatable{resource="nvidia_com_gpu",node!~"vk-mock"}) - '
    '(sum(kube_pod_container_resource_requests{resource="nvidia_com_gpu",node!~"vk-mock",'
    'node!=""} * on(namespace, pod) group_left() max by (namespace, pod) '
    '(kube_pod_status_phase{phase=~"Pending|Running"} == 1)) or vector(0))'
)


def _set_gate_query(repo: Repo, change: Any) -> None:
    def edit(config_map: dict[str, Any]) -> None:
        policy = yaml.safe_load(config_map["data"]["policy.yaml"])
        policy["spec"]["query"] = change(policy["spec"]["query"])
        config_map["data"]["policy.yaml"] = yamlemit.dump(policy)

    repo.edit(GATE_CONFIG_MAP, edit)


def test_gate_query_counting_everything_and_absence_as_zero(repo: Repo, validate: Validate) -> None:
    _set_gate_query(repo, lambda _: OLD_DEFAULT)
    expect(
        validate(repo.root, "staging"),
        UNRESTRICTED,
        f"{GATE_QUERY}reads kube-state-metrics series but never its up series "
        '(up{job="kube-state-metrics"}): stale or missing inputs cannot be told from a real reading; '
        "guard with `and on () (min(up{...}) == 1)`",
        f"{GATE_QUERY}vector(...) makes a sample out of nothing: with kube-state-metrics down or stale the "
        "gate reads a number instead of applying onPrometheusUnavailable; leave absence absent",
    )


def test_gate_query_selecting_a_training_pool(repo: Repo, validate: Validate) -> None:
    """The rendered query with the L40S pool's label swapped for the H100 training pool's."""
    _set_gate_query(
        repo,
        lambda q: q.replace('label_trainyard_dev_pool="infer-l40s"', 'label_trainyard_dev_pool="train-h100"'),
    )
    expect(
        validate(repo.root, "staging"),
        UNRESTRICTED,
        f"{GATE_QUERY}selects the nodes of pool 'train-h100' (role training), whose GPUs inference cannot "
        "use; count only pools inference can use (infer-l40s)",
    )


def test_gate_query_excluding_a_training_pool_is_fine(repo: Repo, validate: Validate) -> None:
    """`unless on (node) kube_node_labels{<training pool>}` excludes; only inclusion counts."""
    training = (
        'max by (node) (kube_node_labels{job="kube-state-metrics", label_trainyard_dev_pool="train-h100"})'
    )
    excluded = f" unless on (node) {training} or on (node) "
    _set_gate_query(repo, lambda q: q.replace(" or on (node) ", excluded, 1))
    run = validate(repo.root, "staging")
    assert not [line for line in problems(run) if ": gate-query: " in line], run.out


# rbac ------------------------------------------------------------------------------------


def _rbac(kind: str, name: str, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta(name, "fixture", 4, namespace),
        **body,
    }


def test_rbac(repo: Repo, validate: Validate) -> None:
    base = f"{DEV}/fixture"
    repo.write(
        f"{base}/clusterrole-everything.yaml",
        _rbac(
            "ClusterRole",
            "everything",
            {"rules": [{"apiGroups": ["*"], "resources": ["pods"], "verbs": ["*"]}]},
        ),
    )
    repo.write(
        f"{base}/clusterrolebinding-admin.yaml",
        _rbac(
            "ClusterRoleBinding",
            "admin",
            {
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "cluster-admin",
                },
                "subjects": [{"kind": "ServiceAccount", "name": "gate", "namespace": "sandbox"}],
            },
        ),
    )
    repo.write(
        f"{base}/sandbox/role-secrets.yaml",
        _rbac(
            "Role",
            "secrets",
            {"rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]},
            "sandbox",
        ),
    )
    repo.write(
        f"{base}/sandbox/rolebinding-secrets.yaml",
        _rbac(
            "RoleBinding",
            "secrets",
            {
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "secrets"},
                "subjects": [
                    {"kind": "ServiceAccount", "name": "exporter", "namespace": "sandbox"},
                    {"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"},
                ],
            },
            "sandbox",
        ),
    )
    binding = f"{base}/sandbox/rolebinding-secrets.yaml: RoleBinding/secrets: rbac: Role secrets can "
    role = f"{base}/clusterrole-everything.yaml: ClusterRole/everything: rbac: rules[0]."
    expect(
        validate(repo.root, "dev"),
        f"{role}verbs contains a wildcard; list what is needed",
        f"{role}apiGroups contains a wildcard; list what is needed",
        f"{base}/clusterrolebinding-admin.yaml: ClusterRoleBinding/admin: rbac: binds cluster-admin; "
        "grant the verbs and resources the subject needs",
        f"{binding}read Secrets and is bound to ServiceAccount 'exporter', which is not in "
        "SECRET_READERS['fixture'] (policies/rbac.py)",
        f"{binding}read Secrets and is bound to Group 'devs'; only ServiceAccounts in "
        "policies/rbac.py SECRET_READERS may read Secrets",
    )


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
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": meta("sync", "fixture", 5, "sandbox"),
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            **hardened_deployment("sync", "sandbox")["spec"]["template"]["spec"],
                            "restartPolicy": "OnFailure",
                        }
                    }
                }
            },
        },
    }
    cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox"
    repo.write(f"{DEV}/fixture/sandbox/cronjob-sync.yaml", cronjob)
    where = (
        f"{DEV}/fixture/sandbox/deployment-exporter.yaml: Deployment/exporter: workloads: "
        "spec.template.spec.containers[0] (exporter): "
    )
    expect(
        validate(repo.root, "dev"),
        f"{where}securityContext.runAsNonRoot must be true",
        f"{where}securityContext.allowPrivilegeEscalation must be false",
        f"{where}securityContext.readOnlyRootFilesystem must be true (mount an emptyDir for scratch)",
        f"{where}resources need requests.memory, limits.memory",
        f"{where}image 'ghcr.io/example/exporter:latest' uses :latest; pin a version tag or digest",
        f"{DEV}/fixture/sandbox/cronjob-sync.yaml: CronJob/sync: workloads: spec.jobTemplate.spec"
        ".template.spec.containers[0] (sync): image 'busybox' has no tag and pulls :latest; pin a "
        "version tag or digest",
    )


def test_hardened_workload_passes(repo: Repo, validate: Validate) -> None:
    deployment = hardened_deployment("exporter", "sandbox")
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = (
        "ghcr.io/example/exporter@sha256:" + "0" * 64
    )
    repo.write(f"{DEV}/fixture/sandbox/deployment-exporter.yaml", deployment)
    run = validate(repo.root, "dev")
    assert problems(run) == [], run.out
    assert run.findings("stale") == [
        f"{DEV}/fixture/sandbox/deployment-exporter.yaml: Deployment/exporter: stale: "
        "environments/dev.yaml does not render it; run: python generate.py render dev"
    ]


# size ------------------------------------------------------------------------------------


def _configmap(name: str, data_bytes: int, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    metadata = meta(name, "fixture", 4, "sandbox")
    metadata["annotations"].update(annotations or {})
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": {"blob.txt": "x" * data_bytes},
    }


def test_size(repo: Repo, validate: Validate) -> None:
    base = f"{DEV}/fixture/sandbox"
    repo.write(f"{base}/configmap-big.yaml", _configmap("big", 300_000))
    ssa = {"argocd.argoproj.io/sync-options": "ServerSideApply=true"}
    repo.write(f"{base}/configmap-big-ssa.yaml", _configmap("big-ssa", 300_000, ssa))
    repo.write(f"{base}/configmap-huge.yaml", _configmap("huge", 1_100_000, ssa))
    run = validate(repo.root, "dev")
    size = 300_000 + len(json.dumps(repo.load(f"{base}/configmap-big.yaml"), separators=(",", ":"))) - 300_000
    expect(
        run,
        f"{base}/configmap-big.yaml: ConfigMap/big: size: {size:,} bytes serialized, over the "
        "262,144-byte annotation limit of client-side apply; annotate "
        "argocd.argoproj.io/sync-options: ServerSideApply=true or split it",
        f"{base}/configmap-huge.yaml: ConfigMap/huge: size: data is 1,100,008 bytes; a ConfigMap "
        "holds less than 1,048,576 (1 MiB)",
    )


# names -----------------------------------------------------------------------------------


def test_names_and_labels(repo: Repo, validate: Validate) -> None:
    repo.edit(
        f"{DEV}/namespaces/namespace-sandbox.yaml",
        lambda ns: ns["metadata"]["labels"].update({"trainyard.dev/owner": "x" * 64}),
    )
    bad = hardened_deployment("Exporter", "sandbox")
    repo.write(f"{DEV}/fixture/sandbox/deployment-Exporter.yaml", bad)
    expect(
        validate(repo.root, "dev"),
        f"{DEV}/namespaces/namespace-sandbox.yaml: Namespace/sandbox: names: "
        "metadata.labels[trainyard.dev/owner]: label value is 64 characters, more than 63",
        f"{DEV}/fixture/sandbox/deployment-Exporter.yaml: Deployment/Exporter: names: "
        "metadata.name 'Exporter' is not a DNS-1123 subdomain (<= 253)",
    )


def _dashboards(name: str, *uids: str) -> dict[str, Any]:
    data = {
        f"{uid[:20]}.json": json.dumps({"uid": uid, "title": uid, "panels": [], "schemaVersion": 41})
        for uid in uids
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(name, "fixture", 4, "sandbox"),
        "data": data,
    }


def test_dashboard_uids(repo: Repo, validate: Validate) -> None:
    long_uid = "gpu-fleet-utilization-by-team-and-pool-v2"
    repo.write(
        f"{DEV}/fixture/sandbox/configmap-dashboards-a.yaml",
        _dashboards("dashboards-a", "kueue-queues", long_uid),
    )
    repo.write(
        f"{DEV}/fixture/sandbox/grafanadashboard-queues.yaml",
        {
            "apiVersion": "grafana.integreatly.org/v1beta1",
            "kind": "GrafanaDashboard",
            "metadata": meta("queues", "fixture", 5, "sandbox"),
            "spec": {
                "instanceSelector": {"matchLabels": {"dashboards": "grafana"}},
                "json": json.dumps({"uid": "kueue-queues", "title": "Queues", "panels": []}),
            },
        },
    )
    a = f"{DEV}/fixture/sandbox/configmap-dashboards-a.yaml"
    expect(
        validate(repo.root, "dev"),
        f"{a}: ConfigMap/dashboards-a: names: data[gpu-fleet-utilizatio.json].uid '{long_uid}': a "
        "Grafana dashboard UID is 1..40 characters of [A-Za-z0-9_-]",
        f"{DEV}/fixture/sandbox/grafanadashboard-queues.yaml: GrafanaDashboard/queues: names: "
        f"spec.json.uid 'kueue-queues' is also the UID of ConfigMap/dashboards-a ({a}): "
        "Grafana keeps one",
    )


# dcgm-counters ---------------------------------------------------------------------------


def test_malformed_dcgm_counters_csv(repo: Repo, validate: Validate) -> None:
    """The help text this project once shipped (a comma: four fields), plus two other ways
    dcgm-exporter refuses a line."""
    rel = f"{DEV}/monitoring/gpu-operator/configmap-trainyard-dcgm-metrics.yaml"
    # The shipped CSV travels in the gpu-operator values (the chart creates the
    # ConfigMap; tests/monitoring/test_dcgm_csv.py reads it with dcgm-exporter's reader). The
    # policy still guards any rendered ConfigMap carrying the key: put one there, shipped CSV.
    values = repo.load(f"{DEV}/installers/gpu-operator-values.yaml")["dcgmExporter"]["config"]
    repo.write(
        rel,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": values["name"], "namespace": "gpu-operator"},
            "data": {"dcgm-metrics.csv": values["data"]},
        },
    )

    def break_it(cm: dict[str, Any]) -> None:
        cm["data"]["dcgm-metrics.csv"] += (
            "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter, NVLink bandwidth counter, all lanes.\n"
            "DCGM_FI_DEV_GPU_TEMP, gage, GPU temperature.\n"
            'DCGM_FI_DEV_POWER_USAGE, gauge, "Power draw"\n'
        )

    repo.edit(rel, break_it)
    lines = repo.load(rel)["data"]["dcgm-metrics.csv"].splitlines()
    first = len(lines) - 2
    where = f"{rel}: ConfigMap/trainyard-dcgm-metrics: dcgm-counters: data[dcgm-metrics.csv] line"
    run = validate(repo.root, "dev")
    assert run.code == 1
    assert run.findings("dcgm-counters") == [
        f"{where} {first}: 4 fields ('DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter, NVLink bandwidth "
        "counter, all lanes.'), dcgm-exporter needs exactly 3: FIELD, type, help "
        "(no commas in the help text)",
        f"{where} {first + 1}: type 'gage' is not one of counter, gauge, histogram, label, summary",
        f"{where} {first + 2}: a quote; dcgm-exporter's reader refuses quotes in these fields",
    ]


# quarantine --------------------------------------------------------------------------------


def test_a_flavor_tolerating_a_quarantine_taint(repo: Repo, validate: Validate) -> None:
    """dev quarantines with NVSentinel's taints: a flavor tolerating one is training on bad GPUs."""

    def tolerate(flavor: dict[str, Any]) -> None:
        flavor["spec"]["tolerations"] = [
            {"key": "nvidia.com/gpu-xid-error", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "example.com/maintenance", "operator": "Exists", "effect": "NoSchedule"},
            {"operator": "Exists"},
        ]

    repo.edit(f"{DEV}/kueue/resourceflavor-dev-a100.yaml", tolerate)
    where = f"{DEV}/kueue/resourceflavor-dev-a100.yaml: ResourceFlavor/dev-a100: quarantine: "
    keys = "nvidia.com/gpu-nvlink-error, nvidia.com/gpu-xid-error"
    expect(
        validate(repo.root, "dev"),
        *(
            f"{where}spec.tolerations[{i}] tolerates the quarantine taint ({keys}): training admitted "
            "here would run on quarantined nodes"
            for i in (0, 2)
        ),
    )


def test_a_watched_pool_the_controller_may_not_touch(repo: Repo, validate: Validate) -> None:
    rel = f"{STAGING}/health/trainyard-system/configmap-gpu-health-policy.yaml"

    def widen(config_map: dict[str, Any]) -> None:
        policy = yaml.safe_load(config_map["data"]["policy.yaml"])
        policy["spec"]["pools"][0]["nodeSelector"]["matchLabels"] = {"nvidia.com/gpu.present": "true"}
        config_map["data"]["policy.yaml"] = yamlemit.dump(policy)

    repo.edit(rel, widen)
    expect(
        validate(repo.root, "staging"),
        f"{rel}: ConfigMap/gpu-health-policy: quarantine: data[policy.yaml].spec.pools[0]: pool 'train-h100' "
        "does not select on trainyard.dev/pool: the controller's admission policy refuses every "
        "change to nodes without it",
    )
