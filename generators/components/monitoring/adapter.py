"""prometheus-adapter v0.12.0: what serves the External metric every rendered HPA names.

kube-prometheus-stack ships no external-metrics adapter, so without this the HPAs of
`overflow.inference` read a metric nobody serves and hold `minReplicas`
(tests/controlplane/test_prometheus_adapter.py scales one on it).
Rendered into rendered/<env>/monitoring/ only for an environment with inference services,
as upstream's deploy/manifests/ lay it out (the ServiceAccount, the auth-delegator and
extension-apiserver-authentication-reader bindings, the Service, the APIService, the
Deployment, its config ConfigMap), but serving external metrics alone: no `rules`, no
`resourceRules` (metrics-server or another adapter may own custom and resource metrics).

The config's `externalRules` are derived from the spec's `overflow.inference[].metric`, the
one home of each metric name: one rule per distinct name (rules must be mutually exclusive,
config.go:9-11), serving the Prometheus series of that same name under that name. Keys and
meanings pinned against the adapter's own source at v0.12.0
(../shared/src/prometheus-adapter-v0.12.0.tar.gz, paths inside it):
- pkg/config/loader.go:28 reads the file with yaml.UnmarshalStrict: an unknown key stops it;
- pkg/config/config.go:14 `externalRules`; :22 `seriesQuery`; :31 `resources`; :34 `name`;
  :40 `metricsQuery` (template with `<<.Series>>`, `<<.LabelMatchers>>`, `<<.GroupBy>>`);
  :60 `overrides` (label -> group-resource, :68 `resource`); :62 `namespaced`; :77 `matches`;
  :82 `as`;
- pkg/naming/metric_namer.go:156-160: external rules are namespaced unless
  `namespaced: false`; pkg/naming/metrics_query.go:175-186 then adds the label that the
  `namespace` resource maps to (our override: `namespace`) with the HPA's namespace, and
  :173 turns the HPA's `metric.selector` into label matchers (`<<.LabelMatchers>>`);
  :134 (metric_namer.go) passes an empty `<<.GroupBy>>` for external series, so
  `sum(...) by ()` gives one sample;
- pkg/external-provider/metric_converter.go:194: the value is served in milli-units;
- cmd/adapter/adapter.go:154-157,327-330: series are discovered every
  --metrics-relist-interval, looking back --metrics-max-age (default: the interval).
The HPA controller sums the items it gets and divides by the target `averageValue`
(k8s.io/kubernetes v1.36.5 pkg/controller/podautoscaler/replica_calculator.go,
GetExternalPerPodMetricReplicas), so summing in the query changes nothing but the payload.
"""

from __future__ import annotations

import hashlib
from typing import Any

from generators.k8s import objects, rbac
from generators.k8s.hardening import CONTAINER_SECURITY, MACHINERY_PRIORITY_CLASS, pod_security
from generators.k8s.objects import Obj
from generators.model.environment import Environment
from generators.output import yamlemit
from generators.output.templating import render

NAME = "prometheus-adapter"
CLUSTER_NAME = f"trainyard-{NAME}"  # cluster-scoped and kube-system names say whose they are
VERSION = "v0.12.0"  # the release tools/ pins and tests run (tools/toolchain.py PINS)
IMAGE = f"registry.k8s.io/prometheus-adapter/prometheus-adapter:{VERSION}"
CONFIG_FILE = "config.yaml"
CONFIG_DIR = "/etc/adapter"
CERT_DIR = "/var/run/serving-cert"  # an emptyDir: the adapter writes a self-signed pair there
SECURE_PORT = 6443
SERVICE_PORT = 443  # the APIService's default port (apiregistration v1)
GROUP = "external.metrics.k8s.io"
API_VERSION = "v1beta1"
APISERVICE_NAME = f"{API_VERSION}.{GROUP}"
# One sample per HPA query: the series of the HPA's namespace and selector, summed.
METRICS_QUERY = "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
NAMESPACE_LABEL = "namespace"  # the label Prometheus (operator) gives a scraped pod's namespace
# Upstream's deploy/manifests/deployment.yaml: relist every minute (the default is 10m, so
# a new metric would take up to 10 minutes to be served).
RELIST_INTERVAL = "1m"
# Upstream's requests (deploy/manifests/deployment.yaml); the limits are ours (the
# workloads policy requires a memory limit, kube-score a CPU one, as every Deployment here
# has): the lister holds one entry per series name and rule, queries are one per HPA sync.
RESOURCES: dict[str, Any] = {
    "requests": {"cpu": "102m", "memory": "180Mi"},
    "limits": {"cpu": "1", "memory": "512Mi"},
}
# The image's USER (Dockerfile:21), not the distroless nonroot user of trainyard's images.
NOBODY_UID = 65534


def metric_names(env: Environment) -> list[str]:
    """The External metric names the rendered HPAs name, each once, sorted."""
    if env.overflow is None:
        return []
    return sorted({svc.metric_name for svc in env.overflow.inference})


def external_rules(env: Environment) -> list[dict[str, Any]]:
    """One rule per metric name: the Prometheus series of that name, under that name, in the
    HPA's namespace, narrowed by the HPA's selector, summed."""
    return [
        {
            "seriesQuery": f'{{__name__="{name}",{NAMESPACE_LABEL}!=""}}',
            "resources": {"overrides": {NAMESPACE_LABEL: {"resource": "namespace"}}, "namespaced": True},
            "name": {"matches": f"^{name}$", "as": name},
            "metricsQuery": METRICS_QUERY,
        }
        for name in metric_names(env)
    ]


def config_text(env: Environment) -> str:
    return yamlemit.dump({"externalRules": external_rules(env)})


def args(env: Environment) -> list[str]:
    return [
        f"--cert-dir={CERT_DIR}",
        f"--config={CONFIG_DIR}/{CONFIG_FILE}",
        f"--metrics-relist-interval={RELIST_INTERVAL}",
        f"--prometheus-url={env.monitoring.prometheus_url}/",
        f"--secure-port={SECURE_PORT}",
    ]


def generate(env: Environment) -> list[Obj]:
    """The adapter's objects, or none when no HPA needs it or the cluster brings its own."""
    if not metric_names(env) or env.monitoring.external_metrics_adapter == "none":
        return []
    namespace = env.monitoring.namespace
    text = config_text(env)
    labels = {"app.kubernetes.io/name": NAME}
    return [
        rbac.service_account(NAME, namespace, labels),
        # Delegated authentication and authorization (TokenReviews, SubjectAccessReviews): the
        # built-in ClusterRole, bound as upstream's deploy/manifests bind it.
        rbac.cluster_role_binding(f"{CLUSTER_NAME}-auth-delegator", NAME, namespace, "system:auth-delegator"),
        # The apiserver's client and request-header CAs: the built-in Role in kube-system that
        # reads the extension-apiserver-authentication ConfigMap.
        rbac.role_binding(
            f"{CLUSTER_NAME}-auth-reader",
            NAME,
            "kube-system",
            subject_namespace=namespace,
            role="extension-apiserver-authentication-reader",
        ),
        # prometheus-adapter's metrics discovery config (--config): externalRules only.
        objects.config_map(NAME, namespace, {CONFIG_FILE: text}, labels),
        objects.service(NAME, namespace, SERVICE_PORT, "https"),
        render(
            "monitoring/adapter-deployment.yaml.j2",
            name=NAME,
            namespace=namespace,
            image=IMAGE,
            args=args(env),
            port=SECURE_PORT,
            config_dir=CONFIG_DIR,
            cert_dir=CERT_DIR,
            config_sha256=hashlib.sha256(text.encode()).hexdigest(),
            resources=RESOURCES,
            pod_security=pod_security(NOBODY_UID),
            container_security=CONTAINER_SECURITY,
            # autoscaling stops when this pod is preempted: the machinery's class, as the gate's
            priority_class=MACHINERY_PRIORITY_CLASS,
        ),
        render("monitoring/adapter-pdb.yaml.j2", name=NAME, namespace=namespace),
        render(
            "monitoring/adapter-apiservice.yaml.j2",
            name=APISERVICE_NAME,
            group=GROUP,
            version=API_VERSION,
            service=NAME,
            namespace=namespace,
            port=SERVICE_PORT,
        ),
    ]
