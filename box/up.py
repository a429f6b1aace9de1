"""`box up ENV` and `box down ENV`: the environment on a cluster whose controllers are real.

Up, in order (each step waits on the real effect of the one before, never on a sleep):
1. kwokctl starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK
   (box/cluster.py);
2. the pinned CRDs of the other projects' kinds the rendered tree holds (Argo CD,
   Prometheus operator, Grafana operator; with `--argocd` all of theirs) are applied and
   Established;
3. Kueue from its pinned chart: CRDs, RBAC and ConfigMap applied, the controller started as
   the chart's ServiceAccount, then the webhooks registered, and up only once the apiserver
   has been seen calling them (a dry-run Job comes back suspended by Kueue's mutating
   webhook) (box/kueue_chart.py);
4. one KWOK node per node of the environment (box/nodes.py), created before
   step 2 so KWOK readies them meanwhile; up once KWOK reports each Ready and the node
   lifecycle controller has lifted its not-ready taint;
5. rendered/<env> (or the scaled copy's render) server-side applied in Argo CD sync-wave
   order, and up once Kueue reports every ClusterQueue Active;
6. kube-state-metrics (the pinned kube-prometheus-stack chart's, as its ServiceAccount), a
   synthetic dcgm-exporter (box/dcgm_fake.py) and a Prometheus scraping both with
   the rendered alert rules, up once every node's kube_node_labels series and every GPU's
   temperature is in Prometheus (box/monitoring.py); started once the nodes are Ready and
   waited for after step 5, so its first scrapes come while step 5 applies;
7. the rendered prometheus-adapter (environments with inference HPAs) as a host process
   querying that Prometheus, its APIService registered with the aggregator, up once the
   APIService is Available (box/adapter.py);
8. the rendered controller Deployments the box can run (the descheduler, evicting; the
   overflow gate and the health controller, querying that Prometheus) as host processes
   with their rendered arguments, configuration and ServiceAccounts
   (box/controllers.py).
With `--argocd`, step 5 is the real Argo CD's sync instead (box/argocd_up.py), and step 6 is
waited for before it (the adapter Argo CD waits on queries that Prometheus).
Any failure stops whatever was started (`down`), so a failed `up` leaves nothing running.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import re
import shutil
import signal
import ssl
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from box import (
    accounts,
    adapter,
    controllers,
    dcgm_fake,
    jobset,
    kueue,
    kueue_chart,
    manifests,
    monitoring,
)
from box.cluster import EMULATED, Cluster, emulation_args
from box.daemon import Daemon, free_port, group_alive, stop_group
from box.kube import Kube, Obj, condition, is_true, wait_for, wait_true
from box.nodes import environment_nodes, virtual_nodes
from box.scale import scaled_checkout
from box.state import Process, State, run_dir
from generators.components import kueue as kueue_component
from generators.components.monitoring.installers import GPU_OPERATOR_VALUES
from generators.components.overflow.virtual_kubelets import born_with
from generators.layout import INSTALLERS
from generators.model.environment import Environment
from generators.model.load import load
from generators.model.overflow import PROVIDER_LABEL, Overflow
from generators.pipeline.render import RenderedFile, render_tree
from generators.pipeline.render import objects as objects_of
from generators.upstream import kubernetes as kubernetes_versions
from tools.toolchain import tool_path

KUEUE_API = "kueue.x-k8s.io/v1beta2"
KUEUE_GROUP = "kueue.x-k8s.io"
NODES_READY_SECONDS = 300
QUEUES_ACTIVE_SECONDS = 180
WEBHOOK_SECONDS = 60
POLICY_SECONDS = 60  # a new admission policy in effect
CONTROLLER_READY_SECONDS = 120
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PROBE_NAMESPACE = "default"
MONITORING_NAMESPACE = "monitoring"  # where the rendered monitoring objects live

Say = Callable[[str], None]


class BoxError(RuntimeError):
    """The box cannot be brought up or down; the message says why and what to do."""


@dataclass
class Box:
    """A running box as `up` leaves it."""

    env: Environment
    state: State
    folder: Path
    objects: list[Obj]

    @property
    def kubeconfig(self) -> Path:
        return Path(self.state.kubeconfig)

    def client(self) -> Kube:
        return Kube(self.kubeconfig, self.folder / "discovery.json")


def cluster_of(env_name: str, folder: Path) -> Cluster:
    return Cluster(f"trainyard-{env_name}", folder / "kwok")


def rendered(
    root: Path, env_name: str, scale: int, folder: Path, speed: int = 1, kubernetes: str = ""
) -> tuple[Environment, list[RenderedFile]]:
    """The environment and every file `generate.py render` writes for it (scaled, sped up or
    at another Kubernetes minor: of the copy, box/scale.py and at_minor)."""
    copied = scale > 1 or speed > 1 or bool(kubernetes)
    source = scaled_checkout(root, env_name, scale, folder / "scaled", speed) if copied else root
    if kubernetes:
        at_minor(source / "environments" / f"{env_name}.yaml", kubernetes)
    env = load(source, env_name)
    return env, render_tree(env)


KUBERNETES_VERSION = re.compile(r'^(  kubernetesVersion: )"?([0-9.]+)"?', re.MULTILINE)


def at_minor(path: Path, minor: str) -> None:
    """Rewrite the copy's cluster.kubernetesVersion to `minor`.0 (`--kubernetes`), so it renders
    the mechanisms of that minor (generators/upstream/kubernetes.py)."""
    text = path.read_text(encoding="utf-8")
    if not KUBERNETES_VERSION.search(text):
        raise BoxError(f"{path.name}: no cluster.kubernetesVersion line to set to {minor} for --kubernetes")
    path.write_text(KUBERNETES_VERSION.sub(rf'\g<1>"{minor}.0"', text, count=1), encoding="utf-8")


def box_minor(env: Environment) -> tuple[int, int]:
    """The minor the box runs: the environment's cluster.kubernetesVersion (with --kubernetes,
    the copy's); refused when the pinned binaries cannot emulate it (box/cluster.py)."""
    minor = kubernetes_versions.minor(env.kubernetes_version)
    try:
        emulation_args(minor)
    except ValueError as err:
        raise BoxError(
            f"{err}; cluster.kubernetesVersion is {env.kubernetes_version}: run with --kubernetes "
            f"{kubernetes_versions.name(EMULATED[0])} to {kubernetes_versions.name(EMULATED[-1])}"
        ) from None
    return minor


def up(
    root: Path,
    env_name: str,
    scale: int = 1,
    speed: int = 1,
    say: Say = print,
    kubernetes: str = "",
    argocd: bool = False,
) -> Box:
    """Bring the box of `env_name` up (see the module docstring); `down` it on any failure.
    With `argocd`, the real Argo CD deploys rendered/ (box/argocd_up.py) instead of step 5."""
    folder = run_dir(env_name)
    existing = State.load(folder)
    if existing is not None:
        raise BoxError(
            f"a box for {env_name} is already up or half-built in {folder}; "
            f"run: generate.py box down {env_name}"
        )
    began = time.monotonic()
    env, files = rendered(root, env_name, scale, folder, speed, kubernetes)
    minor = box_minor(env)
    cluster = cluster_of(env_name, folder)
    state = State(env=env_name, scale=scale, cluster=cluster.name, speed=speed, kubernetes=kubernetes)
    state.save(folder)
    try:
        box = _build(
            env,
            files,
            cluster,
            state,
            folder,
            say,
            minor,
            ArgoSource(root, scale, speed) if argocd else None,
        )
    except BaseException:
        say(f"box up {env_name} failed; stopping what was started (logs stay in {folder})")
        try:
            down(env_name, say=lambda _: None, keep_logs=True)
        except Exception as err:  # the first failure is the one to report
            say(f"and stopping failed too: {err}")
        raise
    state.ready = True
    state.up_seconds = round(time.monotonic() - began, 1)
    state.save(folder)
    return box


@dataclass(frozen=True)
class ArgoSource:
    """What the box's git repository is made from (box/argocd_repo.py): the checkout and
    the --scale and --speed its environment is rendered with."""

    root: Path
    scale: int
    speed: int


@dataclass
class _Build:
    """The box being built, as every step of `_build` sees it: the admin client, the
    environment and its rendered files and objects, the kwokctl cluster, the state file that
    records each started process, and the run directory."""

    kube: Kube
    env: Environment
    files: list[RenderedFile]
    objects: list[Obj]
    cluster: Cluster
    state: State
    folder: Path
    say: Say

    def record(self, daemon: Daemon) -> None:
        """Note a started process in the state file, so `down` stops it even after a crash."""
        assert daemon.process is not None
        process = Process(daemon.name, daemon.process.pid, list(daemon.ports), str(daemon.log_path))
        self.state.processes.append(process)
        self.state.save(self.folder)

    def installer_values(self, name: str) -> Path | None:
        """rendered/<env>/installers/<name>, written to the run directory (None: not rendered)."""
        for file in self.files:
            if file.path == f"{INSTALLERS}/{name}":
                path = self.folder / name
                path.write_text(file.text, encoding="utf-8")
                return path
        return None

    def token(self, namespace: str, account: str, path: Path) -> Path:
        """A kubeconfig acting as ServiceAccount `account` (accounts.token_kubeconfig)."""
        return accounts.token_kubeconfig(self.kube, self.cluster.kubeconfig, namespace, account, path)


def _build(
    env: Environment,
    files: list[RenderedFile],
    cluster: Cluster,
    state: State,
    folder: Path,
    say: Say,
    minor: tuple[int, int] | None = None,
    argocd: ArgoSource | None = None,
) -> Box:
    objects = objects_of(files)
    at = f" as Kubernetes {kubernetes_versions.name(minor)}" if minor else ""
    say(f"starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler{at} and KWOK in {folder}")
    cluster.create(minor=minor)
    state.kubeconfig = str(cluster.kubeconfig)
    state.save(folder)
    kube = Kube(cluster.kubeconfig, folder / "discovery.json")
    build = _Build(kube, env, files, objects, cluster, state, folder, say)
    try:
        # The nodes first, waited for after Kueue: KWOK and the node lifecycle controller
        # make them Ready while the CRDs and Kueue go in (nothing of either reads a node).
        nodes = environment_nodes(env)
        say(f"creating {len(nodes)} KWOK nodes")
        _create_nodes(kube, nodes)
        say("installing the pinned CRDs the rendered tree uses")
        _install_foreign_crds(kube, env, objects, every=argocd is not None)
        say("installing Kueue from its pinned chart, with webhooks")
        _install_kueue(build)
        _start_jobset(build)
        say(f"waiting for the {len(nodes)} KWOK nodes to be Ready")
        _wait_nodes_ready(kube, nodes)
        # Prometheus scrapes every SCRAPE_SECONDS from a start offset of its own: its first
        # series come seconds after it starts, time spent here applying the rendered tree
        # instead of waiting. Not before the nodes are Ready: the rendered alerts would
        # evaluate a fleet still coming up.
        say("starting kube-state-metrics (the chart's) and Prometheus")
        monitors = _launch_monitoring(build, len(nodes))
        manifests.ensure_external_namespaces(kube, objects)
        if argocd is None:
            say(f"applying {len(objects)} rendered objects in sync-wave order")
            manifests.apply_all(kube, [o for o in objects if not adapter.deferred(o)])  # adapter: step 7
        else:
            # Prometheus first: the adapter Argo CD's sync waits on queries it.
            _await_monitoring(monitors)
            _deploy_with_argocd(build, argocd)
        _register_virtual_nodes(build)
        for obj in objects:
            if obj["kind"] == "ClusterQueue":
                wait_true(
                    kube, KUEUE_API, "ClusterQueue", obj["metadata"]["name"], "Active", QUEUES_ACTIVE_SECONDS
                )
        if argocd is None:
            _await_monitoring(monitors)
            _start_adapter(build)
        _start_controllers(build)
    finally:
        kube.close()
    return Box(env, state, folder, objects)


def _deploy_with_argocd(build: _Build, source: ArgoSource) -> None:
    """Step 5 by the real Argo CD (box/argocd_up.py), the adapter wired during its sync."""
    from box import argocd_up  # only with --argocd: Argo CD's modules load nothing otherwise

    argocd_up.deploy(
        build.kube,
        build.cluster.kubeconfig,
        source.root,
        build.env,
        source.scale,
        source.speed,
        build.objects,
        build.folder,
        build.state.prometheus,
        build.record,
        build.say,
        argocd_up.Checks(_http_ok, _https_ok, CONTROLLER_READY_SECONDS),
    )


def _register_virtual_nodes(build: _Build) -> None:
    """Each provider's virtual node, registered with its virtual-kubelet's ServiceAccount (the
    rendered vk-<provider> Deployment's) as the virtual-kubelet would, then run by KWOK;
    up once KWOK reports it Ready."""
    kube, env, folder = build.kube, build.env, build.folder
    accounts_of = {
        o["metadata"]["name"]: o["spec"]["template"]["spec"].get("serviceAccountName", "default")
        for o in build.objects
        if o["kind"] == "Deployment"
    }
    for provider, node, capacity in virtual_nodes(env):
        assert env.overflow is not None
        account = accounts_of[f"vk-{provider}"]
        token = build.token(env.overflow.namespace, account, folder / f"kubeconfig-{account}")
        build.say(f"registering virtual node {node['metadata']['name']} as ServiceAccount {account}")
        vk = Kube(token, folder / f"discovery-{account}.json")
        name = node["metadata"]["name"]
        mechanism = kubernetes_versions.mechanism(
            kubernetes_versions.Feature.VIRTUAL_NODE, env.kubernetes_version
        )
        if mechanism is kubernetes_versions.Mechanism.PROVIDER:
            # Below 1.36 the program registers its node labelled and closed from its rendered
            # config (the same born_with the generator writes there): no policy to wait for.
            node = born_labelled_and_closed(node, provider, env.overflow)
        try:
            if mechanism is not kubernetes_versions.Mechanism.PROVIDER:
                # A policy acts seconds after it is created (more on a loaded machine); a node
                # registered before misses the provider label and the closed taint, and is
                # fixed only by a later spec update, which nothing guarantees. Up waits for
                # the policy's effect on a dry run instead (docs/controlplane.md).
                closed = functools.partial(
                    _closed_by_policy,
                    vk,
                    _with_capacity(node, capacity),
                    provider,
                    env.overflow.gate.taint_key,
                )
                wait_for(
                    closed, POLICY_SECONDS, f"the rendered admission policy labelling and closing {name}"
                )
            vk.create(_with_capacity(node, capacity))
        finally:
            vk.close()

        def ready(name: str = name, capacity: dict[str, str] = capacity) -> bool:
            found = kube.get("v1", "Node", name)
            return found is not None and _schedulable(found, capacity)

        wait_for(ready, NODES_READY_SECONDS, f"virtual node {name} Ready with its capacity")


def born_labelled_and_closed(node: Obj, provider: str, overflow: Overflow) -> Obj:
    """`node` as a program told by its config (virtual_kubelets.born_with) registers it: with
    the provider label and the closed gate taint."""
    born = copy.deepcopy(node)
    born["metadata"]["labels"][PROVIDER_LABEL] = provider
    born["spec"]["taints"] += [
        {"key": t.key, "value": t.value, "effect": t.effect}
        for t in born_with(overflow, kubernetes_versions.Mechanism.PROVIDER)
    ]
    return born


def _closed_by_policy(vk: Kube, node: Obj, provider: str, taint_key: str) -> bool:
    """A dry-run registration of `node` comes back with the provider label and the gate taint."""
    admitted = vk.create(node, dry_run=True)
    taints = (admitted.get("spec") or {}).get("taints") or []
    return bool(
        (admitted["metadata"].get("labels") or {}).get(PROVIDER_LABEL) == provider
        and any(t.get("key") == taint_key and t.get("effect") == "NoSchedule" for t in taints)
    )


def _install_foreign_crds(kube: Kube, env: Environment, objects: list[Obj], every: bool) -> None:
    """The pinned CRDs of the kinds the rendered tree holds (`every`: all pinned CRDs), but
    Kueue's (the chart brings those, with their conversion webhook), and JobSet's when the
    environment enables it (before Kueue, which sets up its JobSet integration only when the
    CRD is there). Only the rendered kinds: the apiserver's work per CRD is most of this
    step, and ApplicationSet's (the largest, 0.4 MB), PodMonitor's and GrafanaFolder's are
    of kinds no environment renders; with Argo CD every one, for its controller."""
    kinds = {(o["apiVersion"].split("/")[0], o["kind"]) for o in objects}
    crds = [
        crd
        for crd in manifests.crd_documents()
        if crd["spec"]["group"] != KUEUE_GROUP
        and (every or (crd["spec"]["group"], crd["spec"]["names"]["kind"]) in kinds)
    ]
    if jobset.INTEGRATION in env.kueue.integrations:
        crds += jobset.crds()
    manifests.install_crds(kube, crds)


def _start_jobset(build: _Build) -> None:
    """JobSet's controller and its webhooks, when the environment enables JobSet (box/jobset.py)."""
    if jobset.INTEGRATION not in build.env.kueue.integrations:
        return
    daemon, url, ca_pem = jobset.start_jobset(
        tool_path("jobset"), build.cluster.kubeconfig, build.folder / "jobset"
    )
    build.record(daemon)
    for obj in jobset.webhooks(url, ca_pem):
        build.kube.apply(obj)


def _install_kueue(build: _Build) -> None:
    kube, objects = build.kube, build.objects
    namespace = build.env.kueue.namespace
    workdir = build.folder / "kueue"
    workdir.mkdir(parents=True, exist_ok=True)
    chart = kueue_chart.template(build.installer_values(kueue_component.HELM_VALUES), namespace)
    ports = {name: free_port() for name in ("health", "metrics", "webhook")}
    ca_pem = kueue.serving_ca(workdir).read_bytes()
    wired = kueue_chart.wired(chart, f"https://127.0.0.1:{ports['webhook']}", ca_pem)
    webhooks = [o for o in wired if o["kind"].endswith("WebhookConfiguration")]
    crds = [o for o in wired if o["kind"] == "CustomResourceDefinition"]
    rest = [o for o in wired if o not in webhooks and o not in crds]
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    manifests.install_crds(kube, crds)
    for obj in rest:
        kube.apply(obj)
    configuration = kueue_chart.configuration(
        chart, objects, kueue_component.CONFIG_MAP_NAME, kueue_component.CONFIG_KEY
    )
    token = build.token(namespace, kueue_chart.SERVICE_ACCOUNT, workdir / "kubeconfig")
    # batch/job always (up's webhook probe is a Job), JobSet when enabled (box/jobset.py).
    frameworks = ["batch/job", *(f for f in (jobset.INTEGRATION,) if f in build.env.kueue.integrations)]
    daemon = kueue.start_kueue(tool_path("kueue"), token, configuration, workdir, ports, frameworks)
    build.record(daemon)
    for obj in webhooks:
        kube.apply(obj)
    wait_for(lambda: _webhook_answers(kube), WEBHOOK_SECONDS, "the apiserver calling Kueue's webhooks")


def programs(env: Environment) -> dict[str, controllers.Program]:
    """Image repository -> the program the box runs for it: the pinned upstream builds, and
    the project's gate for the gate's and the health controller's images (from the spec)."""
    found = dict(controllers.IMAGE_PROGRAMS)
    if env.overflow is not None:
        found[env.overflow.gate.image.repository] = controllers.TRAINYARD_GATE
    if env.health is not None and env.health.controller is not None:
        found[env.health.controller.image.repository] = controllers.TRAINYARD_GATE
    return found


def prometheus_services(env: Environment, url: str) -> dict[str, str]:
    """The in-cluster Prometheus addresses the rendered policies name -> the box's Prometheus."""
    health = env.health.controller if env.health else None
    addresses = {
        env.overflow.gate.prometheus_url if env.overflow else "",
        health.prometheus_url if health else "",
    } - {""}
    return {address.rstrip("/"): url for address in addresses}


def _start_controllers(build: _Build) -> None:
    """Each rendered controller Deployment whose image the box can run (programs()) as a host
    process, as its ServiceAccount; up once its health endpoint answers. All are started
    before any is waited for: they do not depend on each other (each reads the apiserver and
    Prometheus, both up), and a Python controller's start-up on a busy machine is seconds."""
    known = programs(build.env)
    services = prometheus_services(build.env, build.state.prometheus)
    started: list[tuple[Daemon, str]] = []
    for deployment in (o for o in build.objects if o["kind"] == "Deployment"):
        program = known.get(controllers.repository(deployment))
        if program is None:
            continue
        meta = deployment["metadata"]
        account = deployment["spec"]["template"]["spec"].get("serviceAccountName", "default")
        workdir = build.folder / "controllers" / meta["name"]
        workdir.mkdir(parents=True, exist_ok=True)
        token = build.token(meta["namespace"], account, workdir / "kubeconfig")
        build.say(f"starting {meta['namespace']}/{meta['name']} as ServiceAccount {account}")
        daemon = controllers.host_process(deployment, build.objects, program, token, workdir, services)
        daemon.start()
        build.record(daemon)
        started.append((daemon, controllers.health_url(program, daemon)))
    for daemon, url in started:
        check = _https_ok if url.startswith("https:") else _http_ok
        daemon.wait_until(functools.partial(check, url), CONTROLLER_READY_SECONDS, f"{url} ok")


@dataclass
class _Monitors:
    """kube-state-metrics, the fake dcgm-exporter and Prometheus, started, not yet waited for."""

    ksm: Daemon
    dcgm: Daemon
    server: Daemon
    url: str  # Prometheus's
    nodes: int  # kube_node_labels series to wait for
    temperatures: str  # the query of every GPU's temperature
    gpus: int  # its series to wait for


def _launch_monitoring(build: _Build, nodes: int) -> _Monitors:
    """Start kube-state-metrics, the fake dcgm-exporter and Prometheus (box/monitoring.py);
    _await_monitoring waits for them."""
    kube, objects, state, folder = build.kube, build.objects, build.state, build.folder
    chart = monitoring.template(build.installer_values(monitoring.VALUES), MONITORING_NAMESPACE)
    rbac, deployment = monitoring.kube_state_metrics(chart)
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MONITORING_NAMESPACE}})
    for obj in rbac:
        kube.apply(obj)
    workdir = folder / "monitoring"
    workdir.mkdir(parents=True, exist_ok=True)
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    token = build.token(MONITORING_NAMESPACE, account, workdir / "kubeconfig")
    ksm = controllers.host_process(
        deployment, objects, controllers.KUBE_STATE_METRICS, token, workdir / "kube-state-metrics"
    )
    ksm.start()
    build.record(ksm)
    dcgm, fleet = _start_dcgm_fake(build)
    # Prometheus is told the two ports now; until they answer its scrapes fail and are retried.
    dcgm_selector = build.env.monitoring.selectors.dcgm
    jobs = [dcgm_fake.scrape_job(dcgm_selector, dcgm.ports[0], f"{monitoring.SCRAPE_SECONDS}s")]
    server = monitoring.prometheus(
        ksm.ports[0], monitoring.rule_files(objects, workdir / "rules"), workdir / "prometheus", jobs
    )
    server.start()
    build.record(server)
    url = f"http://127.0.0.1:{server.ports[0]}"
    state.prometheus = url
    state.save(folder)
    temperatures = f"{dcgm_fake.TEMPERATURE}{{{dcgm_selector}}}"
    gpus = sum(node.gpus for node in fleet.nodes)
    return _Monitors(ksm, dcgm, server, url, nodes, temperatures, gpus)


def _await_monitoring(m: _Monitors) -> None:
    """Up once kube-state-metrics and the fake exporter answer, and Prometheus holds one
    kube_node_labels series per node and one GPU temperature per NVIDIA GPU."""
    m.ksm.wait_until(
        functools.partial(_http_ok, f"http://127.0.0.1:{m.ksm.ports[0]}/healthz"),
        CONTROLLER_READY_SECONDS,
        "/healthz ok",
    )
    m.dcgm.wait_until(
        functools.partial(_http_ok, f"http://127.0.0.1:{m.dcgm.ports[0]}/healthz"),
        CONTROLLER_READY_SECONDS,
        "/healthz ok",
    )
    m.server.wait_until(
        lambda: len(monitoring.query(m.url, "kube_node_labels")) >= m.nodes,
        monitoring.READY_SECONDS,
        f"{m.nodes} kube_node_labels series",
    )
    m.server.wait_until(
        lambda: len(monitoring.query(m.url, m.temperatures)) >= m.gpus,
        monitoring.READY_SECONDS,
        f"{m.gpus} {m.temperatures} series (the fake dcgm-exporter scraped)",
    )


def _start_dcgm_fake(build: _Build) -> tuple[Daemon, dcgm_fake.Fleet]:
    """The synthetic dcgm-exporter (box/dcgm_fake.py) serving the rendered counters
    for every NVIDIA node, started (the caller waits for its /healthz)."""
    values = next(f.text for f in build.files if f.path == f"{INSTALLERS}/{GPU_OPERATOR_VALUES}")
    fleet = dcgm_fake.fleet_of(build.env, values)
    daemon = dcgm_fake.daemon(fleet, build.folder / "monitoring" / dcgm_fake.NAME)
    daemon.start()
    build.record(daemon)
    return daemon, fleet


def _start_adapter(build: _Build) -> None:
    """The rendered prometheus-adapter, if any, and its APIService (box/adapter.py)."""
    kube, objects = build.kube, build.objects
    workdir = build.folder / "monitoring" / "prometheus-adapter"
    daemon = adapter.start(
        kube, build.cluster.kubeconfig, objects, workdir, build.state.prometheus, build.state.speed
    )
    if daemon is None:
        return
    build.say("starting prometheus-adapter, registering its APIService")
    build.record(daemon)
    daemon.wait_until(
        functools.partial(_https_ok, f"https://127.0.0.1:{daemon.ports[0]}/healthz"),
        CONTROLLER_READY_SECONDS,
        "/healthz ok",
    )
    adapter.register(kube, objects, daemon.ports[0])


def _http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as response:
        return bool(response.status == 200)


def _https_ok(url: str) -> bool:
    """The controller's own self-signed listener answers 200 (liveness, not identity)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(url, timeout=2, context=context) as response:
        return bool(response.status == 200)


def _webhook_answers(kube: Kube) -> bool:
    """A dry-run Job with a queue label comes back suspended: Kueue's mutating webhook ran."""
    probe: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "box-webhook-probe",
            "namespace": PROBE_NAMESPACE,
            "labels": {QUEUE_LABEL: "box-probe"},
        },
        "spec": {
            "suspend": False,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "probe", "image": "registry.example/probe:1"}],
                }
            },
        },
    }
    admitted = kube.create(probe, dry_run=True)
    return admitted["spec"].get("suspend") is True


def _create_nodes(kube: Kube, nodes: list[tuple[Obj, dict[str, str]]]) -> None:
    """Create the nodes with the capacity a kubelet would report."""
    for node, capacity in nodes:
        kube.create(_with_capacity(node, capacity))


def _wait_nodes_ready(kube: Kube, nodes: list[tuple[Obj, dict[str, str]]]) -> None:
    """Until each node is Ready (KWOK) and schedulable (the node lifecycle controller lifted
    the not-ready taint), with the capacity it was registered with."""
    wanted = {node["metadata"]["name"]: capacity for node, capacity in nodes}
    waiting: list[str] = []

    def all_ready() -> bool:
        listed = {n["metadata"]["name"]: n for n in kube.list("v1", "Node")}
        waiting[:] = [
            _why_not_schedulable(name, listed.get(name), capacity)
            for name, capacity in wanted.items()
            if name not in listed or not _schedulable(listed[name], capacity)
        ]
        return not waiting

    try:
        wait_for(
            all_ready, NODES_READY_SECONDS, f"{len(wanted)} KWOK nodes Ready, not-ready taint lifted", 1.0
        )
    except AssertionError as err:  # which nodes, and what each lacked: a timeout here was a mystery
        raise AssertionError(f"{err}; {len(waiting)} not yet: {'; '.join(waiting[:5])}") from None


def _with_capacity(node: Obj, capacity: dict[str, str]) -> Obj:
    """The Node with the status a kubelet registers it with. In the create, not a later
    patch: KWOK initialises a node's status from the allocatable it first sees, and a patch
    racing its first look lost cpu and memory to KWOK's defaults (1k, 1Ti)."""
    return {**node, "status": {"capacity": capacity, "allocatable": capacity}}


def _why_not_schedulable(name: str, node: Obj | None, capacity: dict[str, str]) -> str:
    """What `_schedulable` found missing on `node`, in one line."""
    if node is None:
        return f"{name} not registered"
    ready = condition(node, "Ready")
    taints = [
        t["key"] for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") == NOT_READY_TAINT
    ]
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    wrong = {k: allocatable.get(k) for k, v in capacity.items() if allocatable.get(k) != v}
    status = f"{ready.get('status')} ({ready.get('reason')})" if ready else "absent"
    return f"{name} Ready {status}, taints {taints}, allocatable differing {wrong}"


def _schedulable(node: Obj, capacity: dict[str, str]) -> bool:
    """Ready, not-ready taint lifted, and reporting the capacity it was registered with."""
    taints = (node.get("spec") or {}).get("taints") or []
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return (
        is_true(node, "Ready")
        and not any(t.get("key") == NOT_READY_TAINT for t in taints)
        and all(allocatable.get(k) == v for k, v in capacity.items())
    )


def down(env_name: str, say: Say = print, keep_logs: bool = False) -> list[str]:
    """Stop every process of the box of `env_name`, verify none is left; returns their names."""
    folder = run_dir(env_name)
    state = State.load(folder)
    stopped: list[str] = []
    if state is not None:
        # Every process is told at once, then each is waited for: the grace periods overlap.
        alive = [p for p in reversed(state.processes) if group_alive(p.pgid)]
        for process in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pgid, signal.SIGTERM)
        for process in alive:
            stop_group(process.name, process.pgid, process.ports)
            stopped.append(process.name)
    cluster = cluster_of(env_name, folder)
    components = cluster.component_pids()
    if components or cluster.folder.exists():
        if keep_logs and (cluster.folder / "logs").is_dir():  # kwokctl removes its folder
            shutil.copytree(cluster.folder / "logs", folder / "logs", dirs_exist_ok=True)
        cluster.delete()
        stopped += list(components)
    if not keep_logs:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        State.path(folder).unlink(missing_ok=True)
    say(f"box {env_name}: stopped {', '.join(stopped) or 'nothing (no box was up)'}")
    return stopped


def kubeconfig(env_name: str) -> Path:
    """The admin kubeconfig of the running box of `env_name`."""
    state = State.load(run_dir(env_name))
    if state is None or not state.kubeconfig or not state.ready:
        raise BoxError(f"no box is up for {env_name}; run: generate.py box up {env_name}")
    return Path(state.kubeconfig)
