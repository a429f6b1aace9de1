"""`generate.py doctor ENV --kubeconfig FILE` against a real kube-apiserver.

The session's bare control plane (tests/controlplane/fixtures.py: etcd and the pinned
kube-apiserver, every CRD of ../shared/crds) holds a cluster shaped as the scratch environment
below says: its nodes (created as a kubelet would register them, status included), Kueue as
the pinned chart installs it with the environment's rendered values (`helm template`: its
Deployment and ConfigMap kueue-manager-config), the kube-prometheus-stack chart's Prometheus
with the chart's default values (and its Prometheus CRD, from the same archive), and the mock
provider's virtual node. Nothing runs: doctor reads objects only.

On that cluster doctor is silent (exit 0, no line). Each other test seeds one gap, expects
exactly one line naming it, and the cluster is put back after it. Expected values are
literals and the spec's numbers, not doctor's code.
"""

from __future__ import annotations

import copy
import json
import sys
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from box.charts import template
from box.kube import Kube, Obj, purge_namespaces, wait_gone
from box.manifests import install_crds
from generators.components import kueue as kueue_component
from generators.model.load import load
from generators.upstream.charts import KUBE_PROMETHEUS_STACK, KUEUE
from tests.controlplane.harness import ControlPlane
from tests.support import ROOT, archive
from tests.support.scratch import run_cli, write_environment

ENV = "doctor-env"
POOL_LABEL = "doctor.trainyard.dev/pool"
TRAINING_TAINT = {"key": "trainyard.dev/training", "value": "true", "effect": "NoSchedule"}
ENVIRONMENT = """\
extends: _defaults.yaml
name: doctor-env
example: true
cluster:
  kubernetesVersion: "KUBERNETES_VERSION"
pools:
  - name: train
    role: training
    gpu: {model: H100-SXM5-80GB, perNode: 8}
    nodes: 2
    cpu: 200
    memory: 1800Gi
    extraResources: {rdma/ib: 8}
    nodeLabels: {doctor.trainyard.dev/pool: train}
    taints:
      - {key: trainyard.dev/training, value: "true", effect: NoSchedule}
  - name: infer
    role: inference
    gpu: {model: L40S-48GB, perNode: 4}
    nodes: 1
    cpu: 100
    memory: 500Gi
    nodeLabels: {doctor.trainyard.dev/pool: infer}
cohorts:
  - name: all
teams:
  - name: alpha
    namespaces: [doctor-alpha]
    cohort: all
    shares: {train: 100, infer: 50}
  - name: serving
    namespaces: [doctor-serving]
    cohort: all
    shares: {infer: 50}
overflow:
  providers:
    - name: mock
      type: mock
      image: {repository: ghcr.io/example/virtual-kubelet, tag: v1.14.1}
      credentialsSecret: {name: mock-provider, key: token}
      config: {cpu: "64", memory: 512Gi, pods: "110"}
      gpus: 8
      gpuModel: L40S-48GB
      costPerGpuHourUsd: 0.01
  gate:
    closeWhenFreeGpusAtLeast: 4
    openWhenFreeGpusBelow: 1
    closeAfterSeconds: 300
    openAfterSeconds: 30
    image: {repository: ghcr.io/example/trainyard-gate, tag: 0.1.0}
    dryRun: false
  migrateBack:
    maxPodsToEvictPerNode: 2
    maxPodsToEvictPerNamespace: 2
    maxPodsToEvictTotal: 2
    deschedulingInterval: 2m
    minPodAge: 5m
  inference:
    - namespace: doctor-serving
      deployment: chat-api
      tier: inference-prod
      podSelector: {app.kubernetes.io/name: chat-api}
      minReplicas: 1
      maxReplicas: 4
      metric: {name: vllm_num_requests_waiting, selector: {deployment: chat-api}, averageValue: "4"}
monitoring:
  exporters: {dcgmExporter: 4.4.1-4.5.2-distroless, kubeStateMetrics: 2.20.0, nodeExporter: 1.12.1}
kueue:
  waitForPodsReady:
    blockAdmission: false
"""
VERSION = "1.36.2"  # the pinned kube-apiserver is v1.36.5


def environment(version: str) -> str:
    return ENVIRONMENT.replace("KUBERNETES_VERSION", version)


TRAIN_NODES = ("doctor-train-0", "doctor-train-1")
INFER_NODE = "doctor-infer-0"
VIRTUAL_NODE = "vk-mock"
KUEUE_NAMESPACE, MONITORING_NAMESPACE = "kueue-system", "monitoring"  # the schema's defaults
PROMETHEUS_CRD = "kube-prometheus-stack/charts/crds/crds/crd-prometheuses.yaml"


def node(name: str, labels: dict[str, str], taints: list[Obj], allocatable: dict[str, str]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {"taints": taints} if taints else {},
        "status": {
            "capacity": allocatable,
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def training_node(name: str) -> Obj:
    allocatable = {"cpu": "200", "memory": "1800Gi", "nvidia.com/gpu": "8", "rdma/ib": "8", "pods": "110"}
    return node(name, {POOL_LABEL: "train"}, [dict(TRAINING_TAINT)], allocatable)


def baseline_nodes() -> list[Obj]:
    """The spec's pools, node for node, and the mock provider's node as it registers."""
    infer = {"cpu": "100", "memory": "500Gi", "nvidia.com/gpu": "4", "pods": "110"}
    virtual = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"}
    return [
        *(training_node(name) for name in TRAIN_NODES),
        node(INFER_NODE, {POOL_LABEL: "infer"}, [], infer),
        node(VIRTUAL_NODE, {"type": "virtual-kubelet", "trainyard.dev/provider": "mock"}, [], virtual),
    ]


def chart_objects(root: Path) -> list[Obj]:
    """Kueue's Deployment and ConfigMap as the pinned chart renders them with the environment's
    values, and the stack chart's Prometheus with its default values (release and namespace:
    the spec's defaults)."""
    values = root / "kueue-values.yaml"
    values.write_text(yaml.safe_dump(kueue_component.helm_values(load(root, ENV))), encoding="utf-8")
    kueue = [
        o
        for o in template(KUEUE.archive, KUEUE.release, values, KUEUE_NAMESPACE)
        if o["kind"] in ("Deployment", "ConfigMap") and o["metadata"]["name"].startswith("kueue-")
    ]
    stack = template(KUBE_PROMETHEUS_STACK.archive, KUBE_PROMETHEUS_STACK.release, None, MONITORING_NAMESPACE)
    return kueue + [o for o in stack if o["kind"] == "Prometheus"]


def prometheus_crd() -> Obj:
    with tarfile.open(archive(KUBE_PROMETHEUS_STACK.archive)) as chart:
        member = chart.extractfile(PROMETHEUS_CRD)
        assert member is not None
        crd: Obj = yaml.safe_load(member.read())
    return crd


@dataclass
class Cluster:
    kube: Kube
    root: Path
    kubeconfig: Path
    nodes: list[Obj]
    charts: list[Obj]

    def doctor(self, *extra: str) -> tuple[int, list[str], str]:
        code, out, err = run_cli(self.root, "doctor", ENV, "--kubeconfig", str(self.kubeconfig), *extra)
        assert "Traceback" not in err, err
        return code, out.splitlines(), err

    def gap(self) -> str:
        """The one line doctor prints (exit 1)."""
        code, lines, err = self.doctor()
        assert (code, len(lines)) == (1, 1), (code, lines, err)
        assert lines[0].startswith("doctor: ") and " — fix: " in lines[0], lines[0]
        return lines[0]

    def apply_node(self, obj: Obj) -> None:
        body = {k: v for k, v in obj.items() if k != "status"}
        self.kube.apply(body)
        self.kube.patch_status("v1", "Node", obj["metadata"]["name"], obj["status"])

    def chart(self, kind: str) -> Obj:
        return copy.deepcopy(next(o for o in self.charts if o["kind"] == kind))

    def restore(self) -> None:
        write_environment(self.root, ENV, environment(VERSION))
        for obj in self.nodes:
            self.apply_node(obj)
        for obj in self.charts:
            self.kube.apply(obj)


@pytest.fixture(scope="module")
def cluster(
    control_plane: ControlPlane, kube: Kube, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """The matching cluster; on exit what this module added is gone again (the nodes, the
    charts' objects, the Prometheus CRD and the namespaces if they were not there before)."""
    root = tmp_path_factory.mktemp("doctor")
    write_environment(root, ENV, environment(VERSION))
    crd = prometheus_crd()
    had_crd = kube.get(crd["apiVersion"], crd["kind"], crd["metadata"]["name"]) is not None
    install_crds(kube, [crd])
    created = [n for n in (KUEUE_NAMESPACE, MONITORING_NAMESPACE) if kube.get("v1", "Namespace", n) is None]
    for namespace in created:
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    state = Cluster(kube, root, control_plane.kubeconfig, baseline_nodes(), chart_objects(root))
    state.restore()
    try:
        yield state
    finally:
        for obj in state.nodes:
            kube.delete("v1", "Node", obj["metadata"]["name"])
        for obj in state.charts:
            kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"]["namespace"])
        purge_namespaces(kube, created)
        if not had_crd:
            kube.delete(crd["apiVersion"], crd["kind"], crd["metadata"]["name"])


@pytest.fixture
def clean(cluster: Cluster) -> Iterator[Cluster]:
    """The matching cluster, put back after the test whatever it changed."""
    yield cluster
    cluster.restore()


def test_silent_when_the_cluster_matches(clean: Cluster) -> None:
    code, lines, err = clean.doctor()
    assert (code, lines) == (0, []), "\n".join([*lines, err])
    summary = err.strip().splitlines()
    assert len(summary) == 1 and "the cluster matches" in summary[0], err
    assert "Kueue v0.19.2" in summary[0] and "3 nodes in 2 pools" in summary[0], summary


def test_kubernetes_minor(clean: Cluster) -> None:
    write_environment(clean.root, ENV, environment("1.37.0"))
    line = clean.gap()
    assert "Kubernetes 1.36 (GET /version)" in line and "cluster.kubernetesVersion is 1.37.0" in line, line
    assert 'set cluster.kubernetesVersion: "1.36.5"' in line, line  # the pinned v1.36.5


def test_kueue_crd_not_served(clean: Cluster) -> None:
    crd = clean.kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "cohorts.kueue.x-k8s.io")
    assert crd is not None
    clean.kube.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", "cohorts.kueue.x-k8s.io")
    wait_gone(clean.kube, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "cohorts.kueue.x-k8s.io", 60)
    try:
        line = clean.gap()
    finally:
        for key in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
            crd["metadata"].pop(key, None)
        crd.pop("status", None)
        install_crds(clean.kube, [crd])
    assert line.startswith("doctor: kueue.x-k8s.io/v1beta2 Cohort not served"), line
    assert "install Kueue v0.19.2" in line, line


def test_kueue_version(clean: Cluster) -> None:
    deployment = clean.chart("Deployment")
    manager = next(c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "manager")
    manager["image"] = "registry.k8s.io/kueue/kueue:v0.18.1"
    clean.kube.apply(deployment)
    line = clean.gap()
    assert "runs registry.k8s.io/kueue/kueue:v0.18.1" in line and "Kueue v0.19.2" in line, line
    assert "helm upgrade --install kueue" in line, line


def test_kueue_not_installed(clean: Cluster) -> None:
    clean.kube.delete("apps/v1", "Deployment", "kueue-controller-manager", KUEUE_NAMESPACE)
    line = clean.gap()
    assert line.startswith("doctor: Kueue is not installed in kueue-system"), line


def kueue_config(clean: Cluster) -> tuple[Obj, dict[str, Any]]:
    config_map = clean.chart("ConfigMap")
    return config_map, yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])


def test_kueue_configuration_missing(clean: Cluster) -> None:
    clean.kube.delete("v1", "ConfigMap", "kueue-manager-config", KUEUE_NAMESPACE)
    line = clean.gap()
    assert "Kueue's Configuration is missing: no ConfigMap kueue-system/kueue-manager-config" in line, line


def test_kueue_integrations(clean: Cluster) -> None:
    config_map, config = kueue_config(clean)
    config["integrations"]["frameworks"] = ["batch/job", "trainer.kubeflow.org/trainjob", "pod"]
    config_map["data"]["controller_manager_config.yaml"] = yaml.safe_dump(config)
    clean.kube.apply(config_map)
    line = clean.gap()
    assert "integrations" in line and "lacks jobset.x-k8s.io/jobset and also enables pod" in line, line


def test_kueue_configuration_drift(clean: Cluster) -> None:
    config_map, config = kueue_config(clean)
    config["waitForPodsReady"]["timeout"] = "5m"
    config_map["data"]["controller_manager_config.yaml"] = yaml.safe_dump(config)
    clean.kube.apply(config_map)
    line = clean.gap()
    assert "waitForPodsReady.timeout: '5m', rendered '30m'" in line, line


def test_gpu_node_of_no_pool(clean: Cluster) -> None:
    stray = node("doctor-stray", {}, [], {"cpu": "64", "nvidia.com/gpu": "8"})
    clean.apply_node(stray)
    try:
        line = clean.gap()
    finally:
        clean.kube.delete("v1", "Node", "doctor-stray")
    assert line.startswith("doctor: 1 GPU node(s) carry no pool's nodeLabels: doctor-stray"), line


def test_pool_node_missing(clean: Cluster) -> None:
    clean.kube.delete("v1", "Node", TRAIN_NODES[1])
    line = clean.gap()
    assert f"pool train: 1 node(s) carry its nodeLabels {POOL_LABEL}=train, the spec says 2" in line, line


def test_pool_taint_missing(clean: Cluster) -> None:
    bare = training_node(TRAIN_NODES[0])
    bare["spec"] = {}
    clean.apply_node(bare)
    line = clean.gap()
    assert f"lack its taint trainyard.dev/training=true:NoSchedule: {TRAIN_NODES[0]}" in line, line


def test_pool_undeclared_taint(clean: Cluster) -> None:
    tainted = training_node(TRAIN_NODES[0])
    tainted["spec"]["taints"].append({"key": "example.com/maintenance", "effect": "NoSchedule"})
    clean.apply_node(tainted)
    line = clean.gap()
    assert "carry taint example.com/maintenance:NoSchedule, which the pool does not declare" in line, line


def test_pool_gpus_short(clean: Cluster) -> None:
    short = training_node(TRAIN_NODES[1])
    short["status"]["allocatable"]["nvidia.com/gpu"] = "7"
    clean.apply_node(short)
    line = clean.gap()
    assert f"less nvidia.com/gpu allocatable than the spec's 8 per node: {TRAIN_NODES[1]} (7)" in line, line


def test_pool_extra_resource_short(clean: Cluster) -> None:
    short = training_node(TRAIN_NODES[0])
    short["status"]["allocatable"]["rdma/ib"] = None  # merge patch: removed
    clean.apply_node(short)
    line = clean.gap()
    assert f"less rdma/ib allocatable than the spec's 8 per node: {TRAIN_NODES[0]} (0)" in line, line


def test_no_prometheus_operator(clean: Cluster) -> None:
    crd = prometheus_crd()
    clean.kube.delete(crd["apiVersion"], crd["kind"], crd["metadata"]["name"])
    wait_gone(clean.kube, crd["apiVersion"], crd["kind"], crd["metadata"]["name"], 60)
    try:
        line = clean.gap()
    finally:
        install_crds(clean.kube, [crd])
    assert line.startswith("doctor: the cluster serves no monitoring.coreos.com/v1 Prometheus"), line


def test_prometheus_of_another_release(clean: Cluster) -> None:
    prometheus = clean.chart("Prometheus")
    clean.kube.delete(
        "monitoring.coreos.com/v1", "Prometheus", prometheus["metadata"]["name"], MONITORING_NAMESPACE
    )
    prometheus["metadata"]["name"] = "monitoring-kube-prometheus-prometheus"
    prometheus["metadata"]["labels"]["release"] = "monitoring"
    clean.kube.apply(prometheus)
    try:
        line = clean.gap()
    finally:
        clean.kube.delete(
            "monitoring.coreos.com/v1",
            "Prometheus",
            "monitoring-kube-prometheus-prometheus",
            MONITORING_NAMESPACE,
        )
    assert "no Prometheus labelled release=kube-prometheus-stack in monitoring" in line, line
    assert "monitoring/monitoring-kube-prometheus-prometheus (release=monitoring)" in line, line


def test_rule_selector(clean: Cluster) -> None:
    prometheus = clean.chart("Prometheus")
    prometheus["spec"]["ruleSelector"] = {"matchLabels": {"release": "monitoring"}}
    clean.kube.apply(prometheus)
    line = clean.gap()
    assert "does not select our PrometheusRules monitoring/trainyard-alerts: ruleSelector is" in line, line


def test_service_monitor_namespace_selector(clean: Cluster) -> None:
    prometheus = clean.chart("Prometheus")
    del prometheus["spec"]["serviceMonitorNamespaceSelector"]  # null: its own namespace only
    clean.kube.apply(prometheus)
    line = clean.gap()
    assert "does not select the namespace of our ServiceMonitors kueue-system/" in line, line
    assert "serviceMonitorNamespaceSelector is its own namespace only" in line, line


def test_virtual_node_missing(clean: Cluster) -> None:
    clean.kube.delete("v1", "Node", VIRTUAL_NODE)
    line = clean.gap()
    assert line.startswith("doctor: virtual node vk-mock (provider mock) is not registered"), line


def test_virtual_node_gpus(clean: Cluster) -> None:
    virtual = copy.deepcopy(clean.nodes[-1])
    virtual["status"]["allocatable"]["nvidia.com/gpu"] = "4"
    clean.apply_node(virtual)
    line = clean.gap()
    assert (
        "virtual node vk-mock has 4 nvidia.com/gpu allocatable, provider mock should advertise 8" in line
    ), line


def test_virtual_node_labels(clean: Cluster) -> None:
    virtual = copy.deepcopy(clean.nodes[-1])
    del virtual["metadata"]["labels"]["trainyard.dev/provider"]
    clean.apply_node(virtual)
    line = clean.gap()
    assert "virtual node vk-mock lacks labels trainyard.dev/provider=mock" in line, line


def test_unreachable(cluster: Cluster, tmp_path: Path) -> None:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    code, out, err = run_cli(cluster.root, "doctor", ENV, "--kubeconfig", str(path))
    assert (code, out) == (2, ""), err
    assert len(err.strip().splitlines()) == 1 and err.startswith("doctor: the API server"), err


def test_unknown_context(cluster: Cluster) -> None:
    code, lines, err = cluster.doctor("--context", "nope")
    assert (code, lines) == (2, []), err
    assert err == "doctor: kubeconfig: no context 'nope' — fix: pass --context with one of: test\n", err


def test_kubeconfig_from_the_environment(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither --kubeconfig nor --prometheus: kubectl's kubeconfig ($KUBECONFIG)."""
    monkeypatch.setenv("KUBECONFIG", f"{cluster.root / 'absent'}:{cluster.kubeconfig}")
    code, out, err = run_cli(cluster.root, "doctor", ENV)
    assert (code, out) == (0, ""), err


def test_no_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No flag reads kubectl's kubeconfig; none there is exit 2, one line, nothing on stdout."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    code, out, err = run_cli(ROOT, "doctor", "dev")
    assert (code, out) == (2, ""), err
    fix = "pass --kubeconfig FILE or set KUBECONFIG"
    assert err == f"doctor: kubeconfig: no kubeconfig at {tmp_path / 'absent'} — fix: {fix}\n", err


# The reads docs/doctor.md lists ("The kubeconfig"); discovery and /version are open to every
# authenticated user by the API server's default system:discovery binding.
DOCTOR_RULES = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["namespaces", "configmaps"], "verbs": ["get"]},
    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list"]},
    {"apiGroups": ["monitoring.coreos.com"], "resources": ["prometheuses"], "verbs": ["list"]},
]


@contextmanager
def service_account_kubeconfig(cluster: Cluster, rules: list[Obj], folder: Path) -> Iterator[Path]:
    """A kubeconfig whose user is an exec plugin (this Python, printing an ExecCredential with
    a ServiceAccount token from the TokenRequest API) bound to `rules` only."""
    name = "trainyard-doctor"
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": KUEUE_NAMESPACE},
    }
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": KUEUE_NAMESPACE}],
    }
    for obj in (account, role, binding):
        cluster.kube.apply(obj)
    try:
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
        token = cluster.kube.raw_post(
            f"/api/v1/namespaces/{KUEUE_NAMESPACE}/serviceaccounts/{name}/token", request
        )["status"]["token"]
        credential = {
            "apiVersion": "client.authentication.k8s.io/v1",
            "kind": "ExecCredential",
            "status": {"token": token},
        }
        admin = yaml.safe_load(cluster.kubeconfig.read_text())
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": admin["clusters"],
            "users": [
                {
                    "name": name,
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1",
                            "command": sys.executable,
                            "args": ["-c", f"print({json.dumps(json.dumps(credential))})"],
                            "interactiveMode": "Never",
                        }
                    },
                }
            ],
            "contexts": [{"name": name, "context": {"cluster": admin["clusters"][0]["name"], "user": name}}],
            "current-context": name,
        }
        path = folder / "kubeconfig"
        path.write_text(yaml.safe_dump(config))
        yield path
    finally:
        cluster.kube.delete("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", name)
        cluster.kube.delete("rbac.authorization.k8s.io/v1", "ClusterRole", name)
        cluster.kube.delete("v1", "ServiceAccount", name, KUEUE_NAMESPACE)


def test_the_documented_reads_suffice(cluster: Cluster, tmp_path: Path) -> None:
    """An exec-plugin token bound to the documented reads only: silent, as the admin is."""
    with service_account_kubeconfig(cluster, DOCTOR_RULES, tmp_path) as kubeconfig:
        code, out, err = run_cli(cluster.root, "doctor", ENV, "--kubeconfig", str(kubeconfig))
    assert (code, out) == (0, ""), err


def test_a_refused_read_is_exit_2(cluster: Cluster, tmp_path: Path) -> None:
    without_nodes = DOCTOR_RULES[1:]
    with service_account_kubeconfig(cluster, without_nodes, tmp_path) as kubeconfig:
        code, out, err = run_cli(cluster.root, "doctor", ENV, "--kubeconfig", str(kubeconfig))
    assert (code, out) == (2, ""), err
    assert len(err.splitlines()) == 1 and "GET /api/v1/nodes: 403 Forbidden" in err, err
