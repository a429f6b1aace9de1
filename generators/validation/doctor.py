"""`generate.py doctor`: does a live Prometheus have what this environment's monitoring reads?

The list of what is needed is not kept here: it is read out of the expressions the
environment ships (every dashboard panel and variable, every alert rule, the overflow gate's
free-GPU query) with generators/promql/reads.py: each series they select, and each label they
group, join or match on. Each is asked of Prometheus read-only (GET /api/v1/query, `count`
queries, a timeout per request); each gap is one line with its fix, which names the spec
field or the rendered installer fragment (rendered/<env>/installers/) that closes it.

What this module does keep are facts the expressions cannot show: which families exist only
after an event (EVENT_ONLY) and what to do about each kind of gap.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from generators.components import monitoring
from generators.components.monitoring import dashboards
from generators.components.monitoring.alerts import groups
from generators.components.monitoring.alerts.exporters import scraped
from generators.model import exporters as exporter_table
from generators.model.environment import Environment
from generators.model.health import NAME as HEALTH_JOB
from generators.promql.reads import Matcher, Selector, label_uses, selectors

DCGM, NODE, KSM, KUEUE = "dcgm-exporter", "node-exporter", "kube-state-metrics", "kueue"
SPEC_SELECTOR = {DCGM: "dcgm", NODE: "nodeExporter", KSM: "kubeStateMetrics", KUEUE: "kueue"}

# Families with no series until something happens (a taint, an XID, an eviction): their
# absence is no gap. Their labels are still checked when they are there.
EVENT_ONLY = {
    "kube_node_spec_taint": "no series while no node is tainted",
    "DCGM_EXP_XID_ERRORS_COUNT": "a series per XID seen in the window",
    "DCGM_EXP_CLOCK_EVENTS_COUNT": "a series per clock event seen in the window",
    "kueue_evicted_workloads_total": "created at the first eviction",
    "kueue_preempted_workloads_total": "created at the first preemption",
    "kueue_admission_wait_time_seconds_bucket": "created at the first admission",
}
HONOR_LABELS = ("namespace", "pod", "container")  # the pod's, when dcgm-exporter maps pods
K = TypeVar("K")
WORKERS = 8  # parallel queries: a few hundred small `count` queries


class Unreachable(Exception):
    """Prometheus did not answer, or not as a Prometheus does."""


@dataclass(frozen=True)
class Gap:
    """What `doctor` found missing or different, and how to fix it (both modes: this
    Prometheus's series, and the cluster read by generators/doctor/cluster.py; each mode's
    command prints it its own way)."""

    what: str
    fix: str


@dataclass(frozen=True)
class Family:
    """A metric the environment reads, the target it comes from, the labels it must carry."""

    name: str
    exporter: str  # a key of scraped(env), or "" when no exporter selector matches
    matchers: tuple[Matcher, ...]  # selects its series (the exporter's, or the expression's own)
    labels: tuple[str, ...]

    def selector(self, *extra: str) -> str:
        return self.name + "{" + ", ".join([*(m.text() for m in self.matchers), *extra]) + "}"


def expressions(env: Environment) -> list[str]:
    """Every PromQL expression the environment ships: panel targets and query variables of
    every dashboard, every rule, the overflow gate's query."""
    found = [r["expr"] for g in groups(env) for r in g["rules"]]
    for _, build in dashboards.builders(env):
        board = build(env)
        stack = list(board["panels"])
        while stack:
            panel = stack.pop(0)
            stack += panel.get("panels", [])
            found += [t["expr"] for t in panel.get("targets", [])]
        for variable in board["templating"]["list"]:
            if variable["type"] == "query":  # label_values(<series>, <label>)
                series, label = (
                    variable["query"].removeprefix("label_values(").removesuffix(")").rsplit(", ", 1)
                )
                found.append(f"count by ({label}) ({series})")
    if env.overflow is not None:
        found.append(env.overflow.gate.free_gpus_query)
    return found


def targets(env: Environment) -> dict[str, str]:
    """Target name -> matchers of everything the expressions read: the exporters and the gate
    (what ExporterDown watches), and the health controller with backend trainyard, whose
    trainyard_health_* series the quarantine dashboard and the GpuHealth* alerts read."""
    found = scraped(env)
    controller = env.health.controller if env.health is not None else None
    if controller is not None:
        found[HEALTH_JOB] = f'job="{HEALTH_JOB}", namespace="{controller.namespace}"'
    return found


def _exporter_matchers(env: Environment) -> dict[str, tuple[Matcher, ...]]:
    return {name: selectors("up{" + matchers + "}")[0].matchers for name, matchers in targets(env).items()}


def families(env: Environment) -> list[Family]:
    """What the expressions read, per metric: the target and the labels it must carry
    (matched on with a positive matcher, grouped by, joined on, or copied by label_replace)."""
    targets = _exporter_matchers(env)
    found: dict[tuple[str, str], tuple[Matcher, ...]] = {}  # (metric, exporter) -> matchers
    labels: dict[tuple[str, str], list[str]] = {}

    def note(sel: Selector) -> tuple[str, str] | None:
        if sel.name == "up":
            return None  # the targets themselves: checked first, per exporter
        owner = next((name for name, ms in targets.items() if set(ms) <= set(sel.matchers)), "")
        key = (sel.name, owner)
        if key not in found:
            found[key] = targets[owner] if owner else tuple(m for m in sel.matchers if m.op == "=")
            labels[key] = []
        return key

    for expr in expressions(env):
        for sel in selectors(expr):
            if (key := note(sel)) is None:
                continue
            exporter_labels = {m.label for m in found[key]}
            for m in sel.matchers:  # a label a matcher asks for a value of must exist
                if m.op in ("=", "=~") and m.value not in ("", ".*") and m.label not in exporter_labels:
                    labels[key].append(m.label)
        for use in label_uses(expr):
            if (key := note(use.selector)) is not None:
                labels[key].append(use.label)
    return [
        Family(name, owner, matchers, tuple(sorted(set(labels[(name, owner)]))))
        for (name, owner), matchers in found.items()
    ]


class Prometheus:
    """Read-only client of the HTTP API: instant `count` queries only."""

    def __init__(self, url: str, timeout: float, at: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.at = at

    def query(self, expr: str) -> list[dict[str, Any]]:
        params = {"query": expr, **({"time": self.at} if self.at else {})}
        request = urllib.request.Request(
            f"{self.url}/api/v1/query?{urllib.parse.urlencode(params)}",
            headers={"Accept": "application/json"},
            method="GET",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = json.load(response)
        except urllib.error.HTTPError as error:
            try:
                body = json.load(error)
            except ValueError:
                raise Unreachable(f"HTTP {error.code} from {self.url}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise Unreachable(f"cannot reach Prometheus at {self.url}: {reason}") from None
        except ValueError:
            raise Unreachable(f"{self.url} did not answer as Prometheus does (no JSON)") from None
        if not isinstance(body, dict) or body.get("status") != "success":
            error_text = body.get("error") if isinstance(body, dict) else body
            raise Unreachable(f"Prometheus at {self.url} refused {expr!r}: {error_text}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def has(self, expr: str) -> bool:
        return bool(self.query(f"count({expr})"))


class Doctor:
    """The checks for one environment against one Prometheus."""

    def __init__(self, env: Environment, prometheus: Prometheus) -> None:
        self.env = env
        self.prom = prometheus
        self.checked_metrics = 0
        self.checked_labels = 0
        self._host_gap: tuple[Gap | None] | None = None

    # --- fixes ---------------------------------------------------------------------------
    def _installer(self, name: str) -> str:
        return monitoring.installer_path(self.env, name)

    def _absent_fix(self, family: Family) -> str:
        m, name = self.env.monitoring, family.name
        gpu_values = self._installer(monitoring.GPU_OPERATOR_VALUES)
        counters = (
            f"the rendered counters ConfigMap {m.dcgm_config_map} (dcgmExporter.config.name in {gpu_values})"
        )
        if name.startswith("DCGM_FI_PROF_"):
            return (
                f"profiling metrics need {counters}, SYS_ADMIN for dcgm-exporter and one DCGM host "
                "engine per node with no other profiler holding the counters, on GPUs that support "
                "profiling"
            )
        if family.exporter == DCGM:
            return f"not in dcgm-exporter's default counters: mount {counters}"
        if name.startswith("node_mountstats_"):
            return (
                f"node_exporter's mountstats collector is off by default: add --collector.mountstats "
                f"(prometheus-node-exporter.extraArgs in "
                f"{self._installer(monitoring.KUBE_PROMETHEUS_STACK_VALUES)}), and an NFS mount"
            )
        if name.startswith("node_infiniband_"):
            return (
                "node_exporter's infiniband collector (on by default) sees no InfiniBand port: "
                "check the nodes' /sys/class/infiniband and that --no-collector.infiniband is not set"
            )
        if name.startswith("kueue_cluster_queue_"):
            return (
                "Kueue exports ClusterQueue quota and usage only with metrics.enableClusterQueueResources: "
                "true (set by the kueue component: apply its rendered configuration, docs/kueue.md)"
            )
        if family.exporter == KSM:
            return "kube-state-metrics does not export it: check its --resources and --metric-denylist"
        if family.exporter == KUEUE:
            return "Kueue does not export it: check the Kueue version (v0.19.2) and its metrics service"
        if family.exporter == HEALTH_JOB:
            return (
                "the health controller does not export it: is its image the gate release the spec "
                "names (health.image)?"
            )
        if family.exporter:
            return f"{family.exporter} does not export it: is it deployed (rendered/{self.env.name}/)?"
        return "nothing exports it: monitoring.checkpointWriteQuery (or the query using it) reads it"

    def _label_fix(self, family: Family, label: str) -> Gap:
        env, m = self.env, self.env.monitoring
        if family.name == "kube_node_labels" and label in monitoring.ksm_node_labels(env):
            flag = m.exporters.kube_state_metrics.allowlist_flag
            return Gap(
                f"kube_node_labels has no {label}",
                f"add {monitoring.ksm_allowlist(env)} to kube-state-metrics {flag} "
                f"({self._installer(monitoring.KUBE_PROMETHEUS_STACK_VALUES)})",
            )
        if family.exporter == DCGM and label == m.host_label:
            return self._host_label_gap(family) or Gap(
                f"DCGM series carry no {label}",
                "dcgm-exporter needs NODE_NAME (the GPU operator sets it) and the release the spec names "
                f"(monitoring.exporters.dcgmExporter: {m.exporters.dcgm.release.version})",
            )
        if family.exporter == DCGM and label in HONOR_LABELS:
            return Gap(
                f"DCGM series carry no {label}",
                "dcgm-exporter maps GPUs to pods only with DCGM_EXPORTER_KUBERNETES=true (the GPU "
                "operator's default) and pods that request GPUs",
            )
        return Gap(
            f"{family.name} has no label {label}",
            "the dashboards and rules group, join or match on it: check that the exporter is "
            "the release monitoring.exporters names",
        )

    def _host_label_gap(self, family: Family) -> Gap | None:
        """DCGM series with the other spelling of the host label: which release writes it.
        Asked once: every DCGM family comes from the same exporter."""
        if self._host_gap is None:
            self._host_gap = (self._other_host_label(family),)
        return self._host_gap[0]

    def _other_host_label(self, family: Family) -> Gap | None:
        expected = self.env.monitoring.host_label
        for other in sorted({"Hostname", "hostname"} - {expected}):
            if self.prom.has(family.selector(f'{other}!=""')):
                writes = [
                    r.release_tag for r in exporter_table.DCGM_EXPORTER.values() if r.host_label == other
                ]
                where = (
                    f"dcgm-exporter {', '.join(writes)} writes it"
                    if writes
                    else "no dcgm-exporter release checked here writes it (the rename is on "
                    "dcgm-exporter's main after 4.8.2)"
                )
                return Gap(
                    f"DCGM series carry {other}, not {expected}",
                    f"{where}; set monitoring.exporters.dcgmExporter to the release you run (outside "
                    f"{exporter_table.DCGM_HOSTNAME}, state monitoring.exporters.labelContract."
                    f"dcgmExporter.hostLabel: {other}; generators/model/exporters.py)",
                )
        return None

    # --- checks --------------------------------------------------------------------------
    def run(self) -> list[Gap]:
        self.prom.query("vector(1)")  # reachable and answering, or Unreachable
        fams = families(self.env)
        wanted = targets(self.env)
        gaps: list[Gap] = []
        up = self._ask({t: f"up{{{matchers}}}" for t, matchers in wanted.items()})
        live = self._ask({t: f"up{{{matchers}}} == 1" for t, matchers in wanted.items() if up[t]})
        missing = {t for t, ok in up.items() if not ok} | {t for t, ok in live.items() if not ok}
        for t in [t for t in wanted if t in missing]:  # in the spec's order
            gaps.append(self._target_gap(t, wanted[t], scraped_at_all=up[t]))
        fams = [f for f in fams if f.exporter not in missing]
        present = self._ask({f: f.selector() for f in fams})
        self.checked_metrics = len(fams)
        for f in fams:
            if not present[f] and f.name not in EVENT_ONLY:
                gaps.append(Gap(f"{f.name} absent", self._absent_fix(f)))
        checks = [(f, label) for f in fams if present[f] for label in f.labels]
        self.checked_labels = len(checks)
        found = self._ask({(f, label): f.selector(f'{label}!=""') for f, label in checks})
        seen: set[tuple[str, str]] = set()
        for (f, label), ok in found.items():
            if ok:
                continue
            gap = self._label_fix(f, label)
            if (gap.what, gap.fix) not in seen:  # one line per gap, not per metric showing it
                seen.add((gap.what, gap.fix))
                gaps.append(gap)
        gaps += self._honor_labels(fams, present)
        return gaps

    def _target_gap(self, target: str, matchers: str, scraped_at_all: bool) -> Gap:
        if scraped_at_all:  # discovered, every scrape failing: a NetworkPolicy, a port, a crash
            return Gap(
                f"{target} target down",
                f"Prometheus finds {{{matchers}}} but up == 0: check "
                "that its pods run and that the port its ServiceMonitor names answers",
            )
        if target == HEALTH_JOB:
            where = f"rendered/{self.env.name}/health/ (its Deployment, Service and ServiceMonitor)"
            return Gap(
                f"no {target} target",
                f"nothing Prometheus scrapes matches {{{matchers}}}: "
                f"health.backend is trainyard, so apply {where}; the quarantine dashboard and "
                "the GpuHealth* alerts read its series",
            )
        key = SPEC_SELECTOR.get(target)
        where = f"monitoring.selectors.{key}" if key else "its ServiceMonitor"
        return Gap(
            f"no {target} target",
            f"nothing Prometheus scrapes matches {{{matchers}}} ({where}): deploy it, label its "
            f"ServiceMonitor release: {self.env.monitoring.release} (what the stack's Prometheus "
            "selects; monitoring.release), or fix the selector",
        )

    def _honor_labels(self, fams: list[Family], present: dict[Family, bool]) -> list[Gap]:
        """honorLabels off: the pod's namespace/pod move to exported_*, and namespace/pod name
        the exporter's own pod, so the label checks above pass while every per-job panel lies."""
        mapped = [f for f in fams if f.exporter == DCGM and present[f] and set(HONOR_LABELS) & set(f.labels)]
        if not mapped:
            return []
        probe = mapped[0]
        exported = [
            label
            for label in ("exported_namespace", "exported_pod")
            if self.prom.has(probe.selector(f'{label}!=""'))
        ]
        if not exported:
            return []
        return [
            Gap(
                f"DCGM series carry {'/'.join(exported)}",
                "the dcgm-exporter ServiceMonitor lacks honorLabels: true, so namespace/pod name the "
                "exporter's pod; set dcgmExporter.serviceMonitor.honorLabels: true "
                f"({self._installer(monitoring.GPU_OPERATOR_VALUES)})",
            )
        ]

    def _ask(self, probes: dict[K, str]) -> dict[K, bool]:
        """Each probe's answer (does it select any series?), asked in parallel."""
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            answers = list(pool.map(self.prom.has, probes.values()))
        return dict(zip(probes, answers, strict=True))


def check(
    env: Environment,
    url: str,
    timeout: float,
    at: str | None = None,
    report: Callable[[Doctor], None] | None = None,
) -> list[Gap]:
    """The gaps of `env` on the Prometheus at `url`; Unreachable when it does not answer."""
    doctor = Doctor(env, Prometheus(url, timeout, at))
    gaps = doctor.run()
    if report is not None:
        report(doctor)
    return gaps
