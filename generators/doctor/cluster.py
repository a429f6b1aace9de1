"""What a live cluster lacks for this environment, read from its API server (read-only GETs).

Nothing here is a second list of what the environment needs: the Kubernetes minor is the
spec's; the APIs are those of the objects `render` produces for the environment (what Argo CD
will apply); Kueue's version is the chart version the render is checked against
(generators/upstream/charts.py) and its Configuration is the one generators/components/kueue.py
renders; the pools' nodes are counted by the inventory census (generators/inventory/census.py,
sync-inventory's rules) and checked against the model's per-node resources; the monitoring
objects and the labels they carry are the rendered ones; the virtual nodes, their labels and
advertised GPUs come from the provider contracts (generators/providers/).

Each gap is one line, `doctor: <what> — fix: <how>`; gaps of one kind on many nodes are one
line naming the first few. docs/doctor.md lists every line and what it reads.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import yaml

from generators.doctor.kubeapi import Api
from generators.inventory import census as census_module
from generators.inventory import nodes as node_module
from generators.inventory.nodes import Node
from generators.k8s.objects import Obj
from generators.model.environment import Environment
from generators.model.health import TAINT_KEY as QUARANTINE_TAINT_KEY
from generators.model.types import Pool
from generators.upstream import charts, kubernetes
from generators.validation.doctor import Gap

NODE_CONDITION_TAINTS = "node.kubernetes.io/"
SHOWN = 5  # node names a grouped line names before "and N more"
ARGOCD = "argocd/"  # rendered/<env>/argocd/ goes to Argo CD's cluster, maybe not this one
KUEUE_DEPLOYMENT_SELECTOR = "control-plane=controller-manager"  # chart and manifests alike
KUEUE_CONTAINER = "manager"
KUEUE_CONFIG_VOLUME = "manager-config"  # the Deployment's volume holding the Configuration
# kind -> (selector, namespace selector) fields of a Prometheus that pick it up
MONITOR_SELECTORS = {
    "ServiceMonitor": ("serviceMonitorSelector", "serviceMonitorNamespaceSelector"),
    "PodMonitor": ("podMonitorSelector", "podMonitorNamespaceSelector"),
    "PrometheusRule": ("ruleSelector", "ruleNamespaceSelector"),
}
STACK_VALUES = {  # the kube-prometheus-stack value that writes each field
    field_name: f"prometheus.prometheusSpec.{field_name}"
    for pair in MONITOR_SELECTORS.values()
    for field_name in pair
}


@dataclass
class Summary:
    """What was read, for the one-line OK summary."""

    version: str = ""
    kueue: str = ""
    nodes: int = 0
    pools: int = 0
    virtual_nodes: int = 0
    prometheus: list[str] = field(default_factory=list)
    monitors: int = 0


def names(items: Iterable[str]) -> str:
    listed = sorted(items)
    shown = ", ".join(listed[:SHOWN])
    return shown + (f" and {len(listed) - SHOWN} more" if len(listed) > SHOWN else "")


def labels_text(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


# --- Kubernetes ---------------------------------------------------------------------------


def server_minor(info: Obj) -> tuple[tuple[int, int], bool]:
    """(major, minor) the server behaves as, and whether that is not its binary's: from 1.33
    /version reports emulationMajor/emulationMinor beside the binary's major/minor
    (k8s.io/apimachinery pkg/version types.go); a kube-apiserver run with
    --emulated-version=kube=1.3X serves that minor's APIs and feature gates."""
    binary = (
        # Some managed offerings print "27+": the digits are the minor.
        (int(str(info["major"]).rstrip("+")), int(str(info["minor"]).rstrip("+")))
        if info.get("major") and info.get("minor")
        else kubernetes.minor(str(info.get("gitVersion", "v0.0")).lstrip("v"))
    )
    if info.get("emulationMajor") and info.get("emulationMinor"):
        emulated = (int(info["emulationMajor"]), int(str(info["emulationMinor"]).rstrip("+")))
        return emulated, emulated != binary
    return binary, False


def spec_version(info: Obj, found: tuple[int, int]) -> str:
    """MAJOR.MINOR.PATCH for cluster.kubernetesVersion: the server's gitVersion without its
    build suffix (v1.30.4-eks-a737599 -> 1.30.4), or <minor>.0 when it emulates another minor."""
    parsed = re.match(r"v?(\d+)\.(\d+)\.(\d+)", str(info.get("gitVersion", "")))
    if parsed and (int(parsed[1]), int(parsed[2])) == found:
        return f"{parsed[1]}.{parsed[2]}.{parsed[3]}"
    return f"{kubernetes.name(found)}.0"


def check_version(env: Environment, api: Api, summary: Summary) -> list[Gap]:
    info = api.get("/version") or {}
    found, emulated = server_minor(info)
    wanted = kubernetes.minor(env.kubernetes_version)
    shown = kubernetes.name(found)
    summary.version = shown + (" (emulated)" if emulated else "")
    if found == wanted:
        return []
    if not kubernetes.supported(f"{shown}.0"):
        oldest, newest = kubernetes.name(kubernetes.OLDEST), kubernetes.name(kubernetes.NEWEST)
        fix = f"trainyard renders for Kubernetes {oldest} to {newest}: upgrade the cluster"
    else:
        fix = (
            f'set cluster.kubernetesVersion: "{spec_version(info, found)}" in {env.source_file} and '
            "re-render: what is rendered differs by minor (generators/upstream/kubernetes.py)"
        )
    return [
        Gap(
            f"the API server is Kubernetes {summary.version} (GET /version), "
            f"cluster.kubernetesVersion is {env.kubernetes_version}",
            fix,
        )
    ]


# --- APIs the rendered objects need -------------------------------------------------------


def api_fix(env: Environment, group: str) -> str:
    if group == "kueue.x-k8s.io":
        chart = charts.KUEUE
        return f"install Kueue v{chart.version} (its chart installs the CRDs): {one_line(install_kueue(env))}"
    if group == "monitoring.coreos.com":
        return (
            f"install prometheus-operator's CRDs: the kube-prometheus-stack release "
            f"{env.monitoring.release} in {env.monitoring.namespace} (monitoring.release, "
            "monitoring.namespace) brings them"
        )
    if group == "grafana.integreatly.org":
        return "install grafana-operator, or set monitoring.dashboards.delivery: sidecar"
    return (
        f"Kubernetes {env.kubernetes_version} serves it: check cluster.kubernetesVersion and the "
        "API server's --runtime-config"
    )


def one_line(command: str) -> str:
    return " ".join(command.replace("\\\n", " ").split())


def install_kueue(env: Environment) -> str:
    values = f"rendered/{env.name}/installers/kueue-values.yaml"
    return charts.KUEUE.command(env.kueue.namespace, values)


def group_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def check_apis(env: Environment, api: Api, objects: list[Obj]) -> list[Gap]:
    """Every apiVersion/kind of the rendered objects (Argo CD's own excepted) is served."""
    kinds: dict[str, set[str]] = defaultdict(set)
    for obj in objects:
        kinds[obj["apiVersion"]].add(obj["kind"])
    groups = api.get("/apis") or {}
    served: dict[str, list[str]] = {
        g["name"]: [v["version"] for v in g.get("versions") or []] for g in groups.get("groups") or []
    }
    served[""] = ["v1"]
    gaps = []
    for api_version in sorted(kinds):
        group, version = group_version(api_version)
        path = f"/apis/{api_version}" if group else "/api/v1"
        listing = api.get(path) if version in served.get(group, []) else None
        have = {r["kind"] for r in (listing or {}).get("resources") or [] if "/" not in r["name"]}
        missing = sorted(kinds[api_version] - have)
        if not missing:
            continue
        versions = served.get(group)
        where = f"serves {group} {', '.join(versions)}" if versions else f"serves no {group or 'core'} API"
        gaps.append(
            Gap(
                f"{api_version} {', '.join(missing)} not served (the cluster {where}); the rendered "
                f"objects of {env.name} need it",
                api_fix(env, group),
            )
        )
    return gaps


# --- Kueue --------------------------------------------------------------------------------


def image_tag(image: str) -> str | None:
    """The tag of an image reference (registry:port/path:tag@digest), None without one."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def leaves(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted path -> scalar or list, for every leaf of a mapping."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(leaves(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def check_kueue(env: Environment, api: Api, summary: Summary) -> list[Gap]:
    from generators.components import kueue as kueue_component

    namespace = env.kueue.namespace
    wanted = f"v{charts.KUEUE.version}"
    deployments = api.list(f"/apis/apps/v1/namespaces/{namespace}/deployments", KUEUE_DEPLOYMENT_SELECTOR)
    found = [
        (d, c)
        for d in deployments or []
        for c in d["spec"]["template"]["spec"].get("containers") or []
        if c.get("name") == KUEUE_CONTAINER
    ]
    if not found:
        return [
            Gap(
                f"Kueue is not installed in {namespace} (kueue.namespace): no Deployment labelled "
                f"{KUEUE_DEPLOYMENT_SELECTOR} with a {KUEUE_CONTAINER} container",
                one_line(install_kueue(env)),
            )
        ]
    deployment, container = found[0]
    gaps = []
    name = deployment["metadata"]["name"]
    tag = image_tag(str(container.get("image", "")))
    summary.kueue = tag or str(container.get("image"))
    if tag != wanted:
        gaps.append(
            Gap(
                f"Kueue in {namespace} runs {container.get('image')} (Deployment {name}); "
                f"{env.name} is rendered and checked for Kueue {wanted}",
                f"upgrade to {wanted}: {one_line(install_kueue(env))}",
            )
        )
    volumes = deployment["spec"]["template"]["spec"].get("volumes") or []
    config_name = next(
        (
            v["configMap"]["name"]
            for v in volumes
            if v.get("name") == KUEUE_CONFIG_VOLUME and isinstance(v.get("configMap"), dict)
        ),
        kueue_component.CONFIG_MAP_NAME,
    )
    gaps += check_kueue_configuration(env, api, name, config_name)
    return gaps


def configuration_fix(env: Environment, deployment: str) -> str:
    from generators.components import kueue as kueue_component

    if env.kueue.configuration_delivery == kueue_component.HELM:
        return one_line(install_kueue(env)) + " (the chart restarts Kueue on a change)"
    return (
        f"sync rendered/{env.name}/kueue/ (ConfigMap {kueue_component.CONFIG_MAP_NAME}), then "
        f"kubectl -n {env.kueue.namespace} rollout restart deployment/{deployment} (Kueue reads "
        "its Configuration only at start-up)"
    )


def check_kueue_configuration(env: Environment, api: Api, deployment: str, config_name: str) -> list[Gap]:
    from generators.components import kueue as kueue_component

    namespace = env.kueue.namespace
    fix = configuration_fix(env, deployment)
    config_map = api.get(f"/api/v1/namespaces/{namespace}/configmaps/{config_name}")
    text = ((config_map or {}).get("data") or {}).get(kueue_component.CONFIG_KEY)
    if text is None:
        return [
            Gap(
                f"Kueue's Configuration is missing: no ConfigMap {namespace}/{config_name} with key "
                f"{kueue_component.CONFIG_KEY} (the Deployment's {KUEUE_CONFIG_VOLUME} volume)",
                fix,
            )
        ]
    try:
        live = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        return [Gap(f"ConfigMap {namespace}/{config_name} is not YAML ({str(err).splitlines()[0]})", fix)]
    if not isinstance(live, dict):
        return [Gap(f"ConfigMap {namespace}/{config_name} holds no Kueue Configuration", fix)]
    gaps = []
    rendered = kueue_component.configuration(env)
    enabled = set((live.get("integrations") or {}).get("frameworks") or [])
    wanted = set(env.kueue.integrations)
    if enabled != wanted:
        parts = []
        if wanted - enabled:
            parts.append(f"lacks {', '.join(sorted(wanted - enabled))}")
        if enabled - wanted:
            parts.append(f"also enables {', '.join(sorted(enabled - wanted))}")
        gaps.append(
            Gap(
                f"Kueue's enabled integrations (ConfigMap {namespace}/{config_name}) "
                f"{' and '.join(parts)}: kueue.integrations is {', '.join(env.kueue.integrations)}",
                fix,
            )
        )
    ours = {k: v for k, v in leaves(rendered).items() if not k.startswith("integrations.")}
    theirs = leaves(live)
    differ = [k for k, v in ours.items() if theirs.get(k) != v and k not in ("apiVersion", "kind")]
    if differ:
        shown = "; ".join(f"{k}: {theirs.get(k, 'unset')!r}, rendered {ours[k]!r}" for k in differ[:SHOWN])
        more = f"; and {len(differ) - SHOWN} more" if len(differ) > SHOWN else ""
        gaps.append(
            Gap(f"Kueue's Configuration (ConfigMap {namespace}/{config_name}) differs: {shown}{more}", fix)
        )
    return gaps


# --- pools --------------------------------------------------------------------------------


def check_pools(env: Environment, nodes: list[Node], summary: Summary) -> list[Gap]:
    taken = census_module.take(env, nodes)
    by_name = {n.name: n for n in nodes}
    summary.pools = len(env.pools)
    summary.nodes = sum(len(c.matched) for c in taken.pools.values())
    gaps = []
    if taken.unmatched:
        gaps.append(
            Gap(
                f"{len(taken.unmatched)} GPU node(s) carry no pool's nodeLabels: "
                f"{names(n.name for n in taken.unmatched)}",
                "label them as their pool's nodeLabels say (kubectl label node NAME KEY=VALUE), or add "
                f"their pool to {env.source_file}",
            )
        )
    for node, pools in taken.ambiguous:
        gaps.append(
            Gap(
                f"node {node.name} carries the nodeLabels of several pools ({', '.join(pools)})",
                "make each pool's nodeLabels select its own nodes only",
            )
        )
    for pool in env.pools:
        entry = taken.pools[pool.name]
        members = [by_name[n] for n in entry.matched]
        gaps += pool_gaps(env, pool, members)
    return gaps


def operational(env: Environment, key: str) -> bool:
    """A taint that says how a node is, not how it is configured: Kubernetes' own condition
    taints (node.kubernetes.io/not-ready, unreachable, unschedulable, *-pressure: the node
    lifecycle controller and the TaintNodesByCondition admission plugin set and clear them),
    and a quarantine by the health backend (trainyard.dev/gpu-health, NVSentinel's taints)."""
    health = env.health.taint_keys if env.health is not None else ()
    return key.startswith(NODE_CONDITION_TAINTS) or key in {QUARANTINE_TAINT_KEY, *health}


def pool_gaps(env: Environment, pool: Pool, members: list[Node]) -> list[Gap]:
    where = f"pool {pool.name}"
    gaps = []
    if len(members) != pool.nodes:
        fix = (
            f"label its nodes {labels_text(pool.node_labels)}, or count what is there: "
            f"generate.py sync-inventory {env.name} --nodes FILE (of kubectl get nodes -o json)"
        )
        gaps.append(
            Gap(
                f"{where}: {len(members)} node(s) carry its nodeLabels {labels_text(pool.node_labels)}, "
                f"the spec says {pool.nodes}",
                fix,
            )
        )
    for taint in pool.taints:
        lacking = [
            n.name
            for n in members
            if not any(
                t.key == taint.key and t.effect == taint.effect and (t.value or None) == taint.value
                for t in n.taints
            )
        ]
        if lacking:
            shown = node_module.taint_text(taint)
            gaps.append(
                Gap(
                    f"{where}: {len(lacking)} node(s) lack its taint {shown}: {names(lacking)}",
                    f"kubectl taint node NAME {shown} (else pods outside Kueue can land on them)",
                )
            )
    foreign: dict[str, list[str]] = defaultdict(list)
    for node in members:
        for carried in node.taints:
            if carried.effect not in census_module.BLOCKING_EFFECTS or operational(env, carried.key):
                continue
            if not any(t.key == carried.key and t.effect == carried.effect for t in pool.taints):
                foreign[node_module.taint_text(carried)].append(node.name)
    for taint_text, tainted in sorted(foreign.items()):
        gaps.append(
            Gap(
                f"{where}: {len(tainted)} node(s) carry taint {taint_text}, which the pool does not "
                f"declare (its pods do not tolerate it): {names(tainted)}",
                f"remove it (kubectl taint node NAME {taint_text}-), or add it to the pool's taints",
            )
        )
    for resource, per_node in pool.per_node.items():
        short = {n.name: n.amount(resource) for n in members if n.amount(resource) < per_node}
        if short:
            gaps.append(
                Gap(
                    f"{where}: {len(short)} node(s) have less {resource} allocatable than the spec's "
                    f"{show(per_node)} per node: "
                    + names(f"{name} ({show(amount)})" for name, amount in short.items()),
                    resource_fix(pool, resource, min(short.values())),
                )
            )
    return gaps


def show(amount: Fraction) -> str:
    return str(amount.numerator) if amount.denominator == 1 else f"{float(amount):g}"


def resource_fix(pool: Pool, resource: str, lowest: Fraction) -> str:
    if resource == pool.gpu_resource:
        return (
            f"check the device plugin on those nodes (its pods and logs); quota counts "
            f"{pool.gpus_per_node} per node (gpu.perNode)"
        )
    if resource in ("cpu", "memory"):
        return (
            f"set the pool's {resource} to what a node has allocatable ({show(lowest)}), or free it "
            "on the nodes"
        )
    return f"check the device plugin for {resource} on those nodes, or fix the pool's extraResources"


# --- monitoring ---------------------------------------------------------------------------


def selects(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector against labels; None (null) selects nothing, {} everything."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        values = expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def selector_text(selector: Obj | None) -> str:
    return "null" if selector is None else yaml.safe_dump(selector, default_flow_style=True).strip()


def namespace_labels(api: Api, objects: list[Obj]) -> Callable[[str], dict[str, str]]:
    """A namespace's labels: the live ones, else the rendered Namespace's (Argo CD will create
    it), with the kubernetes.io/metadata.name label the API server always sets."""
    rendered = {
        o["metadata"]["name"]: dict(o["metadata"].get("labels") or {})
        for o in objects
        if o["kind"] == "Namespace"
    }
    cache: dict[str, dict[str, str]] = {}

    def labels(name: str) -> dict[str, str]:
        if name not in cache:
            live = api.get(f"/api/v1/namespaces/{name}")
            found = (live or {}).get("metadata", {}).get("labels") if live else rendered.get(name, {})
            cache[name] = {**(found or {}), "kubernetes.io/metadata.name": name}
        return cache[name]

    return labels


def check_monitoring(env: Environment, api: Api, objects: list[Obj], summary: Summary) -> list[Gap]:
    monitors = [o for o in objects if o["kind"] in MONITOR_SELECTORS]
    if not monitors:
        return []
    summary.monitors = len(monitors)
    namespace, release = env.monitoring.namespace, env.monitoring.release
    selector = f"release={release}"
    found = api.list(f"/apis/monitoring.coreos.com/v1/namespaces/{namespace}/prometheuses", selector)
    if found is None:
        return [
            Gap(
                "the cluster serves no monitoring.coreos.com/v1 Prometheus: no prometheus-operator, "
                f"so nothing scrapes or evaluates our {len(monitors)} ServiceMonitors and rules",
                f"install kube-prometheus-stack as release {release} in {namespace}, or point "
                "monitoring.release and monitoring.namespace at the stack the cluster runs",
            )
        ]
    if not found:
        elsewhere = api.list("/apis/monitoring.coreos.com/v1/prometheuses") or []
        seen = names(
            f"{p['metadata']['namespace']}/{p['metadata']['name']} "
            f"(release={(p['metadata'].get('labels') or {}).get('release', 'unset')})"
            for p in elsewhere
        )
        return [
            Gap(
                f"no Prometheus labelled {selector} in {namespace} (monitoring.release, "
                f"monitoring.namespace); the cluster has {seen or 'none'}",
                "set monitoring.release and monitoring.namespace to the stack's (kubectl get "
                "prometheus -A --show-labels), or install the stack there",
            )
        ]
    labels_of = namespace_labels(api, objects)
    gaps = []
    for prometheus in found:
        meta = prometheus["metadata"]
        name = f"{meta['namespace']}/{meta['name']}"
        summary.prometheus.append(name)
        spec = prometheus.get("spec") or {}
        unselected: dict[tuple[str, str], list[str]] = defaultdict(list)
        for obj in monitors:
            by_labels, by_namespace = MONITOR_SELECTORS[obj["kind"]]
            obj_ns = obj["metadata"].get("namespace", "")
            if not selects(spec.get(by_labels), obj["metadata"].get("labels") or {}):
                unselected[(obj["kind"], by_labels)].append(f"{obj_ns}/{obj['metadata']['name']}")
            ns_selector = spec.get(by_namespace)
            # null: the Prometheus' own namespace only (the CRD's field description).
            in_scope = (
                obj_ns == meta["namespace"]
                if ns_selector is None
                else selects(ns_selector, labels_of(obj_ns))
            )
            if not in_scope:
                unselected[(obj["kind"], by_namespace)].append(f"{obj_ns}/{obj['metadata']['name']}")
        for (kind, field_name), missed in sorted(unselected.items()):
            value = spec.get(field_name)
            if field_name.endswith("NamespaceSelector"):
                scope = "its own namespace only" if value is None else selector_text(value)
                what = (
                    f"Prometheus {name} does not select the namespace of our {kind}s "
                    f"{names(missed)}: {field_name} is {scope}"
                )
                fix = (
                    f"set {STACK_VALUES[field_name]}: {{}} (every namespace) in the stack's values, "
                    "or label those namespaces to match it"
                )
            else:
                what = (
                    f"Prometheus {name} does not select our {kind}s {names(missed)}: {field_name} is "
                    f"{selector_text(value)}, they carry {labels_text(env.monitoring.selection_labels)}"
                )
                fix = (
                    "give them labels it selects (monitoring.rules.labels), or set "
                    f"{STACK_VALUES[field_name]} in the stack's values to select them"
                )
            gaps.append(Gap(what, fix))
    return gaps


# --- virtual nodes ------------------------------------------------------------------------


def check_virtual_nodes(env: Environment, nodes: list[Node], summary: Summary) -> list[Gap]:
    if env.overflow is None:
        return []
    by_name = {n.name: n for n in nodes}
    where = f"rendered/{env.name}/overflow/"
    gaps = []
    for provider in env.overflow.providers:
        node = by_name.get(provider.node_name)
        if node is None:
            gaps.append(
                Gap(
                    f"virtual node {provider.node_name} (provider {provider.name}) is not registered",
                    f"sync {where} and check the provider: kubectl -n {env.overflow.namespace} logs "
                    f"deployment/{provider.node_name}",
                )
            )
            continue
        summary.virtual_nodes += 1
        advertised = provider.contract.advertised_gpus(provider.contract_input)
        has = node.amount(provider.gpu_resource)
        if has != advertised:
            gaps.append(
                Gap(
                    f"virtual node {provider.node_name} has {show(has)} {provider.gpu_resource} "
                    f"allocatable, provider {provider.name} should advertise {advertised}",
                    f"restart the provider's Deployment with its rendered config ({where}); "
                    f"overflow.providers[{provider.name}].gpus is {provider.gpus}",
                )
            )
        missing = {k: v for k, v in provider.node_labels.items() if node.labels.get(k) != v}
        if missing:
            gaps.append(
                Gap(
                    f"virtual node {provider.node_name} lacks labels {labels_text(missing)}: the "
                    "overflow gate and the inference affinity do not find it",
                    f"delete the Node and restart the provider's Deployment ({where}): it is "
                    "labelled at registration",
                )
            )
    return gaps


# --- all ----------------------------------------------------------------------------------


def applied_objects(env: Environment) -> list[Obj]:
    """The objects Argo CD applies to this cluster: the render's, but for rendered/<env>/argocd/
    (Argo CD's own objects, which live in the cluster Argo CD runs in)."""
    from generators.pipeline import render

    return [f.obj for f in render.render_environment(env) if not f.path.startswith(ARGOCD)]


def check(env: Environment, api: Api) -> tuple[list[Gap], Summary]:
    """Every gap, in the order of docs/doctor.md, and what was read."""
    summary = Summary()
    objects = applied_objects(env)
    gaps = check_version(env, api, summary)
    gaps += check_apis(env, api, objects)
    gaps += check_kueue(env, api, summary)
    nodes = node_module.parse({"items": api.list("/api/v1/nodes") or []})
    virtual = set(env.overflow.virtual_nodes) if env.overflow is not None else set()
    gaps += check_pools(env, [n for n in nodes if n.name not in virtual], summary)
    gaps += check_monitoring(env, api, objects, summary)
    gaps += check_virtual_nodes(env, nodes, summary)
    return gaps, summary
