"""The pinned upstream charts, rendered by the pinned helm with our installer values.

`helm template` (tools/toolchain.py PINS["helm"], `--kube-version 1.36.5`) of each chart archive
generators/upstream/charts.py pins (../shared/charts, via tools.toolchain.archive_path) with
rendered/<env>/installers/*-values.yaml, for every environment. The chart's own templates
decide what the cluster gets; the assertions read that output with small independent
evaluators (tests/monitoring/kubeselect.py: label selectors, Prometheus' relabeling) and take
their expectations from the environment file or literals:

- Kueue 0.19.2: the manager ConfigMap holds our Configuration (equal once parsed, plus the one
  key the chart adds), and its metrics ServiceMonitor exists and is selected by the stack.
- kube-prometheus-stack 88.5.3: its Prometheus selects every ServiceMonitor and PrometheusRule
  we render (rendered/<env>/, the gate's and the health controller's) or configure (Kueue's,
  dcgm-exporter's); the node-exporter ServiceMonitor's relabeling gives the label our queries
  join on the node name; the job labels equal our selectors; Grafana's sidecar files our
  dashboards into their folder. With the chart's default values the same checks fail (the
  tests can fail: what the charts' defaults leave out).
- gpu-operator v26.7.0: the ClusterPolicy names the counters ConfigMap the chart creates, with
  their sha256 on the exporter's pod template, and the dcgm-exporter ServiceMonitor the
  operator makes from it is selected.

The gpu-operator controller, which turns the ClusterPolicy into dcgm-exporter's DaemonSet and
ServiceMonitor, cannot run here (it needs GPU nodes and their driver state). Its contract is
pinned at NVIDIA/gpu-operator v26.7.0 (commit 10ee5b3638b89e11e949412aafa5ba99279c3721) and
modelled by `dcgm_service_monitor` (tests/monitoring/gpu_operator.py):
- assets/state-dcgm-exporter/0500_service_monitor.yaml: ServiceMonitor nvidia-dcgm-exporter,
  labels {app: nvidia-dcgm-exporter}, jobLabel app; 0400_service.yaml: Service
  nvidia-dcgm-exporter labelled app: nvidia-dcgm-exporter, port gpu-metrics 9400.
- controllers/object_controls.go:5022: the ServiceMonitor goes to the operator's namespace;
  :5062: it is not created while the ServiceMonitor CRD is missing (install the stack first);
  :4974-5015 applyServiceMonitorCustomEdits: labels += serviceMonitor.additionalLabels
  (:4980), honorLabels onto the first endpoint (:5002).
- controllers/object_controls.go:1901-1921: dcgmExporter.config.name is mounted with
  `SubPath: dcgm-metrics.csv` at /etc/dcgm-exporter/dcgm-metrics.csv, not Optional, and
  DCGM_EXPORTER_COLLECTORS is set to that path by the operator.
- controllers/object_controls.go:1811-1812 and :1973 addExtraAnnotations: dcgmExporter.annotations
  go onto the DaemonSet's pod template; :4790-4820 isDaemonsetSpecChanged: the DaemonSet is
  updated when the hash of its spec changes (so a new counters sha256 rolls the exporter).
Helm installs a ConfigMap before a ClusterPolicy: helm v3.22.0 pkg/releaseutil/kind_sorter.go:31
InstallOrder (ConfigMap at :42), kinds it does not know last (:151).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
import yaml

from generators.k8s.objects import Obj
from generators.upstream import charts
from tests.monitoring import kubeselect, stack_chart
from tests.monitoring.conftest import ENVIRONMENTS
from tests.monitoring.gpu_operator import dcgm_service_monitor
from tests.monitoring.installs import Env, helm_template, of_kind, one
from tests.support import ROOT, archive, recipes
from tests.support.edits import edited
from tests.support.recipes import header_command, helm_commands
from tests.support.scratch import run_cli, write_environment

KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
NODE = "gpu-node-17"  # a node name the scrape target carries in __meta_kubernetes_pod_node_name


# A stack another team installed: prod's spec naming release `monitoring` in `observability`.
ADOPTED = "prod-observability"


def adopted(root: Path) -> Env:
    """prod, rendered in a scratch repository, with the stack another team runs."""
    text = (ROOT / "environments" / "prod.yaml").read_text(encoding="utf-8")
    text = edited(text, "name: prod\n", f"name: {ADOPTED}\n")
    text = edited(text, "monitoring:\n", "monitoring:\n  release: monitoring\n  namespace: observability\n")
    write_environment(root, ADOPTED, text)
    (root / "rendered").mkdir()
    code, out, err = run_cli(root, "render", ADOPTED)
    assert code == 0, out + err
    return Env(ADOPTED, root)


@pytest.fixture(scope="module", params=[*ENVIRONMENTS, ADOPTED])
def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Env:
    e = adopted(tmp_path_factory.mktemp("adopted")) if request.param == ADOPTED else Env(request.param)
    if e.spec["kueue"]["configurationDelivery"] != "helmValues":
        pytest.fail(
            f"{e.name}: Kueue from plain manifests: its ServiceMonitor is Kueue's prometheus "
            "manifest, not checked here; extend this test",
            pytrace=False,
        )
    return e


def dcgm_of(env: Env, ours: bool = True) -> Obj:
    policy = one(env.gpu_operator(ours), "ClusterPolicy")
    sm = dcgm_service_monitor(policy, env.m["dcgmExporter"]["namespace"])
    assert sm is not None, "the ClusterPolicy turns dcgm-exporter's ServiceMonitor off"
    return sm


def chart_kueue_monitor(env: Env, ours: bool = True) -> Obj | None:
    """The ServiceMonitor Kueue's chart renders itself, if any."""
    found = of_kind(env.kueue(ours), "ServiceMonitor")
    return found[0] if found else None


def chart_kueue_monitor_enabled(env: Env) -> Obj:
    """The ServiceMonitor Kueue's chart renders with our values but enablePrometheus: true
    (what the values set before trainyard rendered its own)."""
    values = yaml.safe_load(env.values("kueue-values.yaml").read_text(encoding="utf-8"))
    path = stack_chart.scratch_file(f"kueue-values-{env.name}-prometheus.yaml")
    path.write_text(yaml.safe_dump({**values, "enablePrometheus": True}), encoding="utf-8")
    return one(helm_template(charts.KUEUE, env.spec["kueue"]["namespace"], path), "ServiceMonitor")


def kueue_monitor_of(objects: list[Obj], env: Env) -> Obj:
    """The ServiceMonitor of Kueue's metrics among our rendered objects (in Kueue's namespace)."""
    [monitor] = [
        o
        for o in objects
        if o["kind"] == "ServiceMonitor" and o["metadata"]["namespace"] == env.spec["kueue"]["namespace"]
    ]
    return monitor


def kueue_monitor(env: Env) -> Obj:
    return kueue_monitor_of(list(env.rendered()), env)


def ours_to_scrape(env: Env) -> list[Obj]:
    """Every ServiceMonitor and PrometheusRule we render or configure."""
    rendered = [o for o in env.rendered() if o["kind"] in ("ServiceMonitor", "PrometheusRule")]
    assert kueue_monitor(env) in rendered
    return [*rendered, dcgm_of(env)]


# --- Kueue ------------------------------------------------------------------------------------
def test_kueue_chart_holds_our_configuration(env: Env) -> None:
    values = yaml.safe_load(env.values("kueue-values.yaml").read_text(encoding="utf-8"))
    ours = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    namespace = env.spec["kueue"]["namespace"]
    config_map = one(env.kueue(), "ConfigMap", "kueue-manager-config")
    assert config_map["metadata"]["namespace"] == namespace
    held = yaml.safe_load(config_map["data"][KUEUE_CONFIG_KEY])
    # the one key the chart adds (templates/manager/manager-config.yaml), with its own names
    assert held.pop("internalCertManagement") == {
        "enable": True,
        "webhookServiceName": "kueue-webhook-service",
        "webhookSecretName": "kueue-webhook-server-cert",
    }
    assert held == ours
    assert held["namespace"] == namespace


def test_kueue_metrics_servicemonitor_targets_the_metrics_service_as_our_job(env: Env) -> None:
    """Ours selects the chart's metrics Service, names a port it has, copies the chart's own
    endpoint (enablePrometheus: true, rendered for the comparison), and gives our job."""
    objects = env.kueue()
    monitor = kueue_monitor(env)
    services = [
        s
        for s in of_kind(objects, "Service")
        if kubeselect.matches(monitor["spec"]["selector"], s["metadata"].get("labels") or {})
    ]
    assert [s["metadata"]["name"] for s in services] == ["kueue-controller-manager-metrics-service"]
    ports = {p["name"] for p in services[0]["spec"]["ports"]}
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= ports
    assert kubeselect.job_label(monitor, services[0]) == env.job("kueue")
    charts_own = chart_kueue_monitor_enabled(env)
    assert monitor["spec"]["endpoints"] == charts_own["spec"]["endpoints"]
    assert monitor["spec"]["selector"] == {
        "matchLabels": {
            k: v
            for k, v in charts_own["spec"]["selector"]["matchLabels"].items()
            if k.startswith("app.kubernetes.io/")
            and k not in ("app.kubernetes.io/version", "app.kubernetes.io/managed-by")
        }
    }


def test_kueue_chart_renders_no_servicemonitor_of_its_own(env: Env) -> None:
    """Ours replaces it: two would scrape Kueue twice as one job where a Prometheus selects both."""
    assert chart_kueue_monitor(env) is None


# --- kube-prometheus-stack: selection -----------------------------------------------------------
@pytest.mark.parametrize("ours", [True, False], ids=["our-values", "chart-defaults"])
def test_prometheus_selects_everything_we_render_or_configure(env: Env, ours: bool) -> None:
    """The stack as the spec's release in the spec's namespace, with our values or with none
    at all (a stack someone else installed with the chart's defaults): the same selection."""
    prometheus = one(env.kps(ours), "Prometheus")
    assert prometheus["metadata"]["namespace"] == env.m["namespace"]
    release = {"matchLabels": {"release": env.m["release"]}}
    assert prometheus["spec"]["serviceMonitorSelector"] == prometheus["spec"]["ruleSelector"] == release
    labels = env.namespace_labels()
    wanted = ours_to_scrape(env)
    kinds = {o["kind"] for o in wanted}
    assert kinds == {"ServiceMonitor", "PrometheusRule"}
    missed = [
        f"{o['kind']} {o['metadata']['namespace']}/{o['metadata']['name']}"
        for o in wanted
        if not kubeselect.selected(prometheus, o, labels)
    ]
    assert not missed, missed


def test_the_charts_own_monitors_are_not_selected(env: Env) -> None:
    """Why Kueue's is ours and the operator's carries additionalLabels, by the same
    evaluator: Kueue's chart's own ServiceMonitor (enablePrometheus: true with the chart's
    defaults) and the operator's without additionalLabels are not selected by the stack."""
    prometheus = one(env.kps(ours=False), "Prometheus")
    labels = env.namespace_labels()
    assert not kubeselect.selected(prometheus, chart_kueue_monitor_enabled(env), labels)
    bare = dcgm_of(env)
    bare["metadata"]["labels"] = {"app": "nvidia-dcgm-exporter"}
    assert not kubeselect.selected(prometheus, bare, labels)


def test_dcgm_servicemonitor_keeps_pod_labels_and_names_our_job(env: Env) -> None:
    monitor = dcgm_of(env)
    assert monitor["spec"]["endpoints"][0].get("honorLabels") is True
    service = {"metadata": {"name": "nvidia-dcgm-exporter", "labels": {"app": "nvidia-dcgm-exporter"}}}
    assert kubeselect.job_label(monitor, service) == env.job("dcgm")


# --- kube-prometheus-stack: node-exporter and kube-state-metrics --------------------------------
def _subchart(objects: tuple[Obj, ...], kind: str, name: str) -> Obj:
    """The `kind` object of subchart `name` (its app.kubernetes.io/name label)."""
    return next(
        o for o in of_kind(objects, kind) if o["metadata"]["labels"].get("app.kubernetes.io/name") == name
    )


def _scrape(objects: tuple[Obj, ...], name: str) -> tuple[Obj, Obj]:
    """(ServiceMonitor, Service) of subchart `name`: the monitor that selects its Service."""
    service = _subchart(objects, "Service", name)
    monitor = next(
        m
        for m in of_kind(objects, "ServiceMonitor")
        if kubeselect.matches(m["spec"]["selector"], service["metadata"]["labels"])
    )
    return monitor, service


def _scraped_labels(monitor: Obj) -> dict[str, str]:
    """A node_exporter target's labels after the ServiceMonitor's relabeling (host network:
    the address is the node's IP)."""
    target = {
        "__address__": "10.0.0.7:9100",
        "__meta_kubernetes_pod_node_name": NODE,
        "__meta_kubernetes_namespace": "monitoring",
    }
    return kubeselect.relabel(target, monitor["spec"]["endpoints"][0].get("relabelings") or [])


def _health_join_labels(env: Env) -> set[str]:
    """The label every rendered quarantine query over node_exporter series takes the node from
    (its outer label_replace into `node`); empty without a health policy."""
    found: set[str] = set()
    for obj in env.rendered():
        if obj["kind"] != "ConfigMap" or obj["metadata"]["name"] != "gpu-health-policy":
            continue
        for text in obj["data"].values():
            for condition in yaml.safe_load(text)["spec"]["conditions"]:
                query = condition["query"]
                if 'job="node-exporter"' not in query and env.job("nodeExporter") not in query:
                    continue
                found |= set(re.findall(r'"node", "\$1", "([A-Za-z_][A-Za-z0-9_]*)", "\(\.\*\)"\)\)', query))
    return found


def test_node_exporter_relabeling_gives_the_node_name_our_queries_join_on(env: Env) -> None:
    monitor, service = _scrape(env.kps(), "prometheus-node-exporter")
    join = env.m["nodeExporterHostLabel"]
    assert _scraped_labels(monitor)[join] == NODE
    health = _health_join_labels(env)
    if env.spec["health"]["backend"] == "trainyard":
        assert health == {join}, health
    assert kubeselect.job_label(monitor, service) == env.job("nodeExporter")


def test_node_exporter_default_leaves_the_host_address_in_instance(env: Env) -> None:
    """The control, by the same evaluator: the chart's own relabelings are `[]`, so
    `instance` keeps the host address the dashboards cannot join on."""
    monitor, _ = _scrape(env.kps(ours=False), "prometheus-node-exporter")
    assert _scraped_labels(monitor)["instance"] == "10.0.0.7:9100"


def test_node_exporter_args_are_the_charts_defaults_then_mountstats(env: Env) -> None:
    default = one(env.kps(ours=False), "DaemonSet")["spec"]["template"]["spec"]["containers"][0]["args"]
    ours = one(env.kps(), "DaemonSet")["spec"]["template"]["spec"]["containers"][0]["args"]
    mountstats = "node_mountstats_" in env.m["checkpointWriteQuery"]
    assert ours == ([*default, "--collector.mountstats"] if mountstats else default)


def test_kube_state_metrics_exports_the_pools_node_labels(env: Env) -> None:
    objects = env.kps()
    keys = sorted({k for pool in env.spec["pools"] for k in pool["nodeLabels"]})
    deployment = _subchart(objects, "Deployment", "kube-state-metrics")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--metric-labels-allowlist=nodes=[{','.join(keys)}]" in args
    monitor, service = _scrape(objects, "kube-state-metrics")
    assert kubeselect.job_label(monitor, service) == env.job("kubeStateMetrics")


# --- kube-prometheus-stack: Grafana ---------------------------------------------------------
def test_grafana_sidecar_files_our_dashboards_into_their_folder(env: Env) -> None:
    prefix = env.m["dashboards"]["uidPrefix"] + "-"
    dashboards = [
        o
        for o in env.rendered()
        if o["kind"] == "ConfigMap"
        and any(k.startswith(prefix) and k.endswith(".json") for k in o.get("data", {}))
    ]
    if env.m["dashboards"]["delivery"] != "sidecar":
        assert not dashboards  # GrafanaDashboards instead: docs/monitoring.md, "Grafana"
        return
    objects = env.kps()
    # the grafana subchart's fullname: <release>-grafana
    grafana = one(objects, "Deployment", f"{env.m['release']}-grafana")
    sidecar = next(
        c for c in grafana["spec"]["template"]["spec"]["containers"] if c["name"] == "grafana-sc-dashboard"
    )
    settings = {e["name"]: e.get("value") for e in sidecar["env"]}
    assert dashboards
    for board in dashboards:
        meta = board["metadata"]
        assert (meta.get("labels") or {}).get(settings["LABEL"]) == settings["LABEL_VALUE"], meta["name"]
        assert settings["NAMESPACE"] == "ALL" or meta["namespace"] in settings["NAMESPACE"].split(",")
        assert meta["annotations"][settings["FOLDER_ANNOTATION"]] == env.m["dashboards"]["folder"]
    provider = one(objects, "ConfigMap", f"{env.m['release']}-grafana-config-dashboards")
    providers = yaml.safe_load(provider["data"]["provider.yaml"])["providers"]
    assert [p["options"]["foldersFromFilesStructure"] for p in providers] == [True]


# --- gpu-operator -------------------------------------------------------------------------------
def test_gpu_operator_creates_the_counters_it_mounts_and_rolls_on_change(env: Env) -> None:
    objects = env.gpu_operator()
    namespace = env.m["dcgmExporter"]["namespace"]
    dcgm = one(objects, "ClusterPolicy")["spec"]["dcgmExporter"]
    name = env.m["dcgmExporter"]["configMapName"]
    assert dcgm["config"] == {"name": name}
    counters = one(objects, "ConfigMap", name)
    assert counters["metadata"]["namespace"] == namespace
    csv = counters["data"]["dcgm-metrics.csv"]
    assert csv.startswith("# Rendered by trainyard")
    sha = hashlib.sha256(csv.encode()).hexdigest()
    assert dcgm["annotations"] == {"trainyard.dev/dcgm-counters-sha256": sha}
    assert dcgm["serviceMonitor"]["enabled"] is True
    named = env.m["exporters"]["dcgmExporter"]
    if "-" in named:  # an image tag: pinned
        assert dcgm["version"] == named


def test_the_dcgm_exporter_that_runs_is_the_release_the_spec_names(env: Env) -> None:
    """Label names follow from the named release, so the ClusterPolicy must run exactly it:
    `<dcgm>-<exporter>-<os>`, whose exporter part is the named version (chart default or ours)."""
    version = one(env.gpu_operator(), "ClusterPolicy")["spec"]["dcgmExporter"]["version"]
    named = env.m["exporters"]["dcgmExporter"]
    assert version.split("-")[1] == (named.split("-")[1] if "-" in named else named), version


def test_gpu_operator_default_has_no_counters_configmap(env: Env) -> None:
    """The control: without our values the ClusterPolicy names no counters at all."""
    objects = env.gpu_operator(ours=False)
    assert "config" not in one(objects, "ClusterPolicy")["spec"]["dcgmExporter"]
    assert not [c for c in of_kind(objects, "ConfigMap") if "dcgm-metrics.csv" in c.get("data", {})]


def test_install_commands_pin_the_chart_and_never_reuse_values(env: Env) -> None:
    for path in sorted(env.installers.glob("*-values.yaml")):
        header = recipes.header(path)
        commands = re.findall(r"helm upgrade (--install )?(\S+) (\S+)(?:.|\\\n)*?-f (\S+)", header)
        assert len(commands) == 1, path
        [(install, release, reference, values)] = commands
        chart = next(c for c in charts.CHARTS if c.reference == reference)
        assert f"--version {chart.version}" in header
        assert values == f"rendered/{env.name}/installers/{path.name}"
        assert "--reuse-values" not in header
        archive(chart.archive)
        if chart is charts.KUBE_PROMETHEUS_STACK:  # the spec's release, never a second stack
            assert release == env.m["release"]
            assert f"--namespace {env.m['namespace']} " in header
            assert bool(install) == (release == "kube-prometheus-stack"), header


def test_readme_and_docs_install_order_is_the_rendered_commands_in_order() -> None:
    """The README recipe, copied as written: the three commands of prod's rendered headers,
    kube-prometheus-stack first (CRDs), then the GPU operator, then Kueue."""
    installers = ROOT / "rendered" / "prod" / "installers"
    expected = [
        header_command(installers / f)
        for f in ("kube-prometheus-stack-values.yaml", "gpu-operator-values.yaml", "kueue-values.yaml")
    ]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- install-order:", 1)[1].split("<!-- /install-order -->", 1)[0]
    assert helm_commands(block) == expected
    docs = (ROOT / "docs" / "monitoring.md").read_text(encoding="utf-8")
    section = docs.split("### Install order", 1)[1].split("\n### ", 1)[0]
    assert helm_commands(section) == expected


def _admits(policy: Obj, namespace: str, port: int, port_name: str) -> bool:
    """Does one NetworkPolicy ingress rule admit TCP `port` from a pod in `namespace`?"""
    for rule in policy["spec"].get("ingress") or []:
        sources = rule.get("from")
        from_ok = not sources or any(
            "namespaceSelector" in s
            and "podSelector" not in s
            and kubeselect.matches(s["namespaceSelector"], {"kubernetes.io/metadata.name": namespace})
            for s in sources
        )
        ports = rule.get("ports")
        port_ok = not ports or any(p.get("port") in (port, port_name) for p in ports)
        if from_ok and port_ok:
            return True
    return False


def test_prometheus_can_reach_every_target_we_render(env: Env) -> None:
    """Each rendered ServiceMonitor selects a rendered Service whose port it names, backed by a
    rendered workload's container port, and the namespace's NetworkPolicies (default-deny in
    the overflow namespace) admit the Prometheus' namespace on that port."""
    prometheus_ns = one(env.kps(), "Prometheus")["metadata"]["namespace"]
    objects = list(env.rendered())
    # Kueue's targets the chart's Service (test_kueue_metrics_servicemonitor_targets_...)
    monitors = [m for m in of_kind(objects, "ServiceMonitor") if m is not kueue_monitor_of(objects, env)]
    scraped = env.spec.get("overflow") is not None or env.spec["health"]["backend"] == "trainyard"
    assert bool(monitors) == scraped  # the gate's and the health controller's
    for monitor in monitors:
        ns, name = monitor["metadata"]["namespace"], monitor["metadata"]["name"]
        [service] = [
            s
            for s in of_kind(objects, "Service")
            if s["metadata"]["namespace"] == ns
            and kubeselect.matches(monitor["spec"]["selector"], s["metadata"].get("labels") or {})
        ]
        workloads = [
            w
            for w in objects
            if w["kind"] in ("Deployment", "DaemonSet", "StatefulSet")
            and w["metadata"]["namespace"] == ns
            and kubeselect.matches(
                {"matchLabels": service["spec"]["selector"]}, w["spec"]["template"]["metadata"]["labels"]
            )
        ]
        assert workloads, f"{ns}/{name}: no rendered workload behind Service {service['metadata']['name']}"
        for endpoint in monitor["spec"]["endpoints"]:
            [port] = [p for p in service["spec"]["ports"] if p.get("name") == endpoint["port"]]
            target = port.get("targetPort", port["port"])
            for workload in workloads:
                pod = workload["spec"]["template"]
                container_ports = [p for c in pod["spec"]["containers"] for p in c.get("ports") or []]
                [cport] = [p for p in container_ports if target in (p.get("name"), p["containerPort"])]
                policies = [
                    p
                    for p in of_kind(objects, "NetworkPolicy")
                    if p["metadata"]["namespace"] == ns
                    and "Ingress" in p["spec"].get("policyTypes", ["Ingress"])
                    and kubeselect.matches(p["spec"]["podSelector"], pod["metadata"]["labels"])
                ]
                if policies:  # isolated: some policy must admit the scrape
                    assert any(
                        _admits(p, prometheus_ns, cport["containerPort"], cport.get("name", ""))
                        for p in policies
                    ), f"{ns}/{name}: no NetworkPolicy admits {prometheus_ns}"
