"""Semantic rules of the `monitoring` section that its schema cannot express.

Called from semantics.check; each Problem sits at the offending value of the file. The
checks read the section's settings and the pools through the model's fields (fromspec's rule)
and locate problems by it; the controllers' prometheusUrl (each controller's own URL is
derived from it) and the exporters' versions (whose parse is what is checked) are read as
written.

`stack: kube-prometheus` is refused (tests/monitoring/test_refusals.py), with the reason, until trainyard
renders what that stack needs. Read in prometheus-operator/kube-prometheus v0.18.0
(manifests/): its Prometheus `k8s` selects every ServiceMonitor and PrometheusRule
(prometheus-prometheus.yaml: all four selectors `{}`), but its ServiceAccount prometheus-k8s
may list endpoints only in default, kube-system and monitoring
(prometheus-roleSpecificNamespaces.yaml), so the dcgm-exporter (gpu-operator), Kueue, gate
and health targets are never discovered; its NetworkPolicy prometheus-k8s admits port 9090
only from Prometheus, prometheus-adapter and Grafana pods (prometheus-networkPolicy.yaml), so
the gate fails closed and the health controller is blind; and its kube-state-metrics v2.19.0
and node_exporter v1.11.1 (inside generators/model/exporters.py's ranges) take their
arguments (the node-label allowlist, mountstats) as jsonnet, not values. docs/monitoring.md
("Supported monitoring stacks") lists each piece a later change must render.

The mismatches with the stack's release and namespace that the file itself shows:
- `rules.labels.release` other than `release`: the stack's Prometheus selects `release:
  <release>` (its chart's default), so it would select none of our objects (error);
- a `prometheusUrl` (overflow gate, health controller) naming a Service in a namespace other
  than `namespace`, or a kube-prometheus-stack Prometheus Service of another release than
  `release` (the chart names it `<fullname>-prometheus`, templates/prometheus/service.yaml):
  the controller would ask a Prometheus that is not the stack's, or none (warning);
- a pool of another vendor's GPUs (amd.com/gpu): no GPU dashboard or GPU alert shows it
  (they read dcgm-exporter; warning);
- a dcgm-exporter named by version, not image tag, or not in generators/model/exporters.py's
  table: the GPU operator values then cannot pin the image the labels were read from (the
  operator runs its chart's default image instead; warning).
"""

from __future__ import annotations

import re
from typing import Any

from generators.errors import Problem, format_path
from generators.model import exporters
from generators.model.build import build_pools
from generators.model.checks.health import NVIDIA_PREFIX
from generators.model.checks.where import item
from generators.model.environment import Environment
from generators.model.fromspec import spec_path, take
from generators.model.monitoring import Monitoring
from generators.model.types import Pool
from generators.spec.checker import Checker, Path_
from generators.spec.source import Document
from generators.upstream import charts

SUPPORTED = ("kube-prometheus-stack",)

_REASONS = {
    "kube-prometheus": (
        "monitoring stack 'kube-prometheus' is not supported yet: its Prometheus may discover "
        "targets only in default, kube-system and monitoring, its NetworkPolicy admits port 9090 "
        "only from its own pods (the gate and the health controller could not query it), and its "
        "kube-state-metrics 2.19.0 and node_exporter 1.11.1 are unchecked releases configured in jsonnet",
        "use stack: kube-prometheus-stack (docs/monitoring.md, 'Supported monitoring stacks', lists "
        "what kube-prometheus would need)",
    ),
}
# http://<service>.<namespace>.svc[.<cluster domain>][:port][/path]
_IN_CLUSTER = re.compile(
    r"^https?://(?P<service>[a-z0-9-]+)\.(?P<namespace>[a-z0-9-]+)\.svc(\.[^/:]*)?(:\d+)?(/.*)?$"
)
OPERATED = "prometheus-operated"  # the Service prometheus-operator creates beside every Prometheus
_CONTROLLERS = (("overflow", "gate", "prometheusUrl"), ("health", "prometheusUrl"))


def stack_fullname(release: str) -> str:
    """kube-prometheus-stack's `kube-prometheus-stack.fullname` (templates/_helpers.tpl, no
    fullnameOverride): the release if it contains the chart's name, else
    `<release>-kube-prometheus-stack`, cut to 26 characters, trailing `-` dropped."""
    name = charts.KUBE_PROMETHEUS_STACK.name
    full = release if name in release else f"{release}-{name}"
    return full[:26].rstrip("-")


def prometheus_service(release: str) -> str:
    """The Service the chart puts in front of its Prometheus (templates/prometheus/service.yaml)."""
    return f"{stack_fullname(release)}-prometheus"


class _Monitoring(Checker):
    section = spec_path(Environment, "monitoring")

    def __init__(self, doc: Document, value: dict[str, Any]) -> None:
        super().__init__(doc, value)
        self.m: dict[str, Any] = value[self.section[0]]
        self.release: str = take(Monitoring, "release", self.m)
        self.namespace: str = take(Monitoring, "namespace", self.m)

    def stack(self) -> None:
        stack: str = take(Monitoring, "stack", self.m)
        if stack not in SUPPORTED:
            message, hint = _REASONS[stack]
            self.add(spec_path(Monitoring, "stack"), message, hint)

    def release_label(self) -> None:
        labels: dict[str, str] = take(Monitoring, "rules_labels", self.m)
        labelled = labels.get("release")
        if labelled is not None and labelled != self.release:
            self.add(
                (*spec_path(Monitoring, "rules_labels"), "release"),
                f"release label {labelled!r} is not monitoring.release {self.release!r}: the stack's "
                f"Prometheus selects release: {self.release} and would select none of trainyard's "
                "ServiceMonitors and rules",
                "remove it, or set monitoring.release to the stack's Helm release (docs/adopting.md)",
            )

    def prometheus_urls(self) -> None:
        """A controller's in-cluster Prometheus URL names the stack's namespace, and, when it
        names a kube-prometheus-stack Prometheus Service, the stack's release's."""
        ours = (OPERATED, prometheus_service(self.release))
        default = f"remove it: the default is http://{OPERATED}.{self.namespace}.svc:9090"
        for path in _CONTROLLERS:
            section: Any = self.v
            for part in path[:-1]:
                section = (section or {}).get(part)
            url = (section or {}).get(path[-1])
            found = _IN_CLUSTER.match(url) if isinstance(url, str) else None
            if found is None:
                continue
            service, namespace = found["service"], found["namespace"]
            where = f"{path[0]} asks Prometheus {service} in namespace {namespace}"
            if namespace != self.namespace:
                message = f"{where}, but the stack runs in monitoring.namespace {self.namespace!r}"
                self._warn_at(path, message, default)
            elif service not in ours and service.endswith("-prometheus"):
                message = (
                    f"{where}: release {self.release} (monitoring.release) names its Prometheus "
                    f"Service {ours[1]}"
                )
                self._warn_at(path, message, default)

    def _warn_at(self, path: Path_, message: str, hint: str) -> None:
        self.problems.append(
            Problem(self.doc.locate(path), message, format_path(path), hint, severity="warning")
        )

    def dcgm_image(self) -> None:
        named = self.m["exporters"]
        stated = named.get("labelContract", {}).get("dcgmExporter")
        try:
            choice = exporters.dcgm_exporter(named["dcgmExporter"], stated)
        except exporters.UnknownVersion:
            return  # refused by semantics.exporter_versions
        release = choice.release
        if release.dcgm is None:
            self.warn(
                ("exporters", "dcgmExporter"),
                f"dcgm-exporter {release.version} is not in the table of releases this project has "
                "read (generators/model/exporters.py): its image tag's DCGM part is not checked",
                "name a tabled release, e.g. "
                + _tag(exporters.DCGM_EXPORTER[max(exporters.DCGM_EXPORTER, key=_key)]),
            )
        elif choice.image_tag is None:
            self.warn(
                ("exporters", "dcgmExporter"),
                f"dcgm-exporter {release.version} names no image: the GPU operator values cannot pin "
                "it, so the operator runs its chart's default image, a release whose labels were not "
                "read for this environment",
                f"write the image tag {_tag(release)} (or -ubuntu22.04)",
            )

    def other_gpus(self) -> None:
        """A pool of another vendor's GPUs (amd.com/gpu) is on no GPU dashboard: the hardware,
        utilization and training dashboards and the GPU alerts read dcgm-exporter series."""
        for i, pool in enumerate(build_pools(self.v)):
            resource = pool.gpu_resource
            if resource.startswith(NVIDIA_PREFIX):
                continue
            self._warn_at(
                item("pools", i, Pool, "gpu_resource"),
                f"pool {pool.name!r} ({resource}) shows on no panel of the GPU hardware, "
                "utilization and training dashboards and in no GPU hardware alert: they read "
                "dcgm-exporter, which sees NVIDIA GPUs only",
                "its quotas, placement, GPUMissing, KueueQuotaDrift and sync-inventory do count it "
                "(docs/adopting.md, 'Pools of other GPUs')",
            )


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _tag(release: exporters.DcgmExporterRelease) -> str:
    return f"{release.release_tag}-distroless"


def check(doc: Document, value: dict[str, Any]) -> list[Problem]:
    checker = _Monitoring(doc, value)
    checker.stack()
    checker.release_label()
    checker.prometheus_urls()
    checker.dcgm_image()
    checker.other_gpus()
    return checker.problems
