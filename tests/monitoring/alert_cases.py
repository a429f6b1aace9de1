"""promtool unit-test cases for every alert, built from the SPEC values (the environment
file with schema defaults), not from the generated rules: a rule whose threshold, `for`,
selector or label drifts from the spec fails here.

Each alert gets at least one case that fires above its threshold (checking labels and
expanded annotations) and one that stays silent at or below it. This module holds the case
types, the Builder (spec values, series helpers and the cases every alert of a kind has),
the Controller (the cases both controllers' own alerts share) and the promtool file; the
cases are in cases_gpu.py, cases_cluster.py and cases_health.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from generators.model import exporters

DCGM_PLACEHOLDER = 9223372036854775794  # what old dcgm-exporters report for "no value"


@dataclass(frozen=True)
class Expect:
    labels: dict[str, str]  # every label of the alert except alertname (severity included)
    value: str = ""  # what {{ $value | humanize }} (or humanizePercentage) expands to


@dataclass(frozen=True)
class Case:
    alert: str
    title: str
    series: list[tuple[str, str]]  # (series, promtool values notation at 1m steps)
    eval_minutes: int
    fires: list[Expect] = field(default_factory=list)  # empty: must stay silent


def seconds(duration: str) -> int:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
    return int(sum(int(n) * units[u] for n, u in re.findall(r"(\d+)(ms|s|m|h|d|w|y)", duration)))


def minutes(duration: str) -> int:
    return -(-seconds(duration) // 60)  # ceiling


def equality_matchers(text: str) -> dict[str, str]:
    """job="x", a="b" -> {job: x, a: b}; synthetic series need labels they can carry."""
    pairs = re.findall(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)\s*"((?:[^"\\]|\\.)*)"\s*,?', text)
    if any(op != "=" for _, op, _ in pairs):
        raise ValueError(f"tests need equality selectors, got {text!r}")
    return {name: value for name, _, value in pairs}


def series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def humanize(value: float) -> str:
    """Prometheus' humanize for 1 <= |value| < 1000 (no SI prefix): %.4g."""
    assert value == 0 or 1 <= abs(value) < 1000, value
    return f"{value:.4g}"


def ksm_label(key: str) -> str:
    """kube-state-metrics names a node label label_<key with every other char as _>."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


class Builder:
    """Cases for one environment."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.mon = spec["monitoring"]
        self.alerts = self.mon["alerts"]
        sel = self.mon["selectors"]
        self.dcgm_job = equality_matchers(sel["dcgm"])
        self.node_job = equality_matchers(sel["nodeExporter"])
        self.ksm_job = equality_matchers(sel["kubeStateMetrics"])
        self.kueue_job = equality_matchers(sel["kueue"])
        self.host = exporters.dcgm_exporter(self.mon["exporters"]["dcgmExporter"]).release.host_label
        self.node_host = self.mon["nodeExporterHostLabel"]
        self.window = minutes(self.alerts["errorWindow"])

    def over_window(
        self,
        alert: str,
        counter: str,
        limit_key: str,
        what: str,
        labels: dict[str, str],
        *,
        hold: int = 0,
        shows_value: bool = True,
    ) -> list[Case]:
        """The two edges of an error counter's threshold, monitoring.alerts[`limit_key`] errors
        per errorWindow: the counter rising by a whole number per minute whose window sum is
        just above the limit fires with `labels` (and that sum as the value when the alert's
        text `shows_value`); rising by one whose sum is at or below the limit (below, clear of
        float noise, when it is above 0) stays silent. `hold`: the alert's `for`, in minutes.
        The counter stands at 100 when the run starts (increase() does not see the start)."""
        limit = self.alerts[limit_key]
        end = self.window + 20 + hold
        above = limit // self.window + 1
        below = max(limit - 1, 0) // self.window
        fired = Expect(labels, humanize(above * self.window) if shows_value else "")
        return [
            Case(alert, f"{what} above {limit_key}", [(counter, f"100+{above}x{end}")], end, [fired]),
            Case(alert, f"{what} at or below {limit_key}", [(counter, f"100+{below}x{end}")], end),
        ]

    @staticmethod
    def dcgm_blank(
        alert: str, what: str, reading: str, end: int, *, counter: bool = False, hold: int = 0
    ) -> Case:
        """DCGM_PLACEHOLDER, what old dcgm-exporters report for "no value", is not `what`: the
        DCGM series `reading` at it stays silent, a gauge for the whole run, a counter that
        stood at 3 from `hold` + 1 minutes before `end` on (`hold`: the alert's `for`, in
        minutes), so that the jump lies in the window and, were the rule not to drop the
        placeholder, its huge increase would have lasted the `for`."""
        values = (
            f"3x{end - hold - 1} {DCGM_PLACEHOLDER}x{hold + 1}" if counter else f"{DCGM_PLACEHOLDER}x{end}"
        )
        return Case(alert, f"a DCGM placeholder is not {what}", [(reading, values)], end)

    @staticmethod
    def at_zero(
        alert: str, what: str, gauge: Callable[[int], tuple[str, str]], end: int, labels: dict[str, str]
    ) -> list[Case]:
        """The two edges of an alert on `max by (...) (gauge) == 0` (no `what` left): `gauge`
        (its series at a value) at 0 fires with `labels`, at 1 stays silent."""
        return [
            Case(alert, f"{what}: 0", [gauge(0)], end, [Expect(labels)]),
            Case(alert, f"{what}: 1", [gauge(1)], end),
        ]

    @staticmethod
    def down(
        alert: str,
        what: str,
        job: dict[str, str],
        end: int,
        labels: dict[str, str],
        *,
        healthy: tuple[tuple[str, str], ...] = (),
    ) -> list[Case]:
        """Cases of a target_down alert ((up == 0) or absent(up), model/promql.target_down) on
        the target `what` scraped as `job`: failing its scrapes fires with the target's labels,
        gone from discovery with the job's (what absent() keeps); up stays silent. `labels`: the
        alert's own (severity included); `healthy`: the up series of other targets, in each."""
        target = {**job, "instance": "10.0.0.2:9400"}
        up = series("up", target)
        return [
            Case(
                alert,
                f"{what} fails its scrapes",
                [*healthy, (up, f"0x{end}")],
                end,
                [Expect({**target, **labels})],
            ),
            Case(alert, f"{what} vanished from discovery", [*healthy], end, [Expect({**job, **labels})]),
            Case(alert, f"{what} up", [*healthy, (up, f"1x{end}")], end),
        ]

    def gpu(self, node: str = "node-a", index: int = 0) -> dict[str, str]:
        return {
            **self.dcgm_job,
            self.host: node,
            "gpu": str(index),
            "UUID": f"GPU-{node}-{index}",
            "modelName": "NVIDIA H100 80GB HBM3",
            "namespace": "team",
            "pod": "trainer-0",
        }

    def gpu_alert(self, severity: str, node: str = "node-a", index: int = 0, **extra: str) -> dict[str, str]:
        return {
            self.host: node,
            "gpu": str(index),
            "UUID": f"GPU-{node}-{index}",
            "severity": severity,
            **extra,
        }

    def pool(self) -> dict[str, Any]:
        return dict(self.spec["pools"][0])

    def node_labels(self, node: str) -> str:
        labels = {**self.ksm_job, "node": node}
        labels.update({ksm_label(k): v for k, v in self.pool()["nodeLabels"].items()})
        return series("kube_node_labels", labels)

    def ib_port(self, device: str = "mlx5_0") -> dict[str, str]:
        return {**self.node_job, self.node_host: "node-a", "device": device, "port": "1"}

    def gpu_resource_ksm(self) -> str:
        return re.sub(r"[^a-zA-Z0-9_]", "_", self.pool()["gpu"]["resource"])

    def usable_node(
        self, node: str, end: int, *, unschedulable: int = 0, ready: str = "1"
    ) -> list[tuple[str, str]]:
        per_node = self.pool()["gpu"]["perNode"]
        base = {**self.ksm_job, "node": node}
        return [
            (self.node_labels(node), f"1x{end}"),
            (
                series(
                    "kube_node_status_allocatable",
                    {**base, "resource": self.gpu_resource_ksm(), "unit": "integer"},
                ),
                f"{per_node}x{end}",
            ),
            (series("kube_node_spec_unschedulable", base), f"{unschedulable}x{end}"),
            self.node_ready(node, ready, end),
        ]

    def node_ready(self, node: str, value: str | int, end: int) -> tuple[str, str]:
        """kube-state-metrics' Ready condition of `node` (status "true": 1 Ready, 0 not)."""
        labels = {**self.ksm_job, "node": node, "condition": "Ready", "status": "true"}
        return (series("kube_node_status_condition", labels), f"{value}x{end}")

    def all(self) -> list[Case]:
        from tests.monitoring import cases_cluster, cases_gpu, cases_health  # they import this module

        return [*cases_gpu.cases(self), *cases_cluster.cases(self), *cases_health.cases(self)]


class Controller:
    """Cases of what both controllers' own alerts share (one program, two policies:
    alerts/controllers.py, Queries.no_leader, .failing and .blind_after_seconds), for the
    controller scraped as `job` that reconciles every `reconcile_interval_seconds`."""

    def __init__(self, b: Builder, job: dict[str, str], reconcile_interval_seconds: int) -> None:
        self.job = job
        # Blind: ten reconcile intervals without a good pass, at least
        # monitoring.alerts.controllerBlindMinSeconds (its schema description).
        self.blind_after = max(b.alerts["controllerBlindMinSeconds"], 10 * reconcile_interval_seconds)
        self.end = self.blind_after // 60 + 10  # every case runs well past blind
        self.error_window = minutes(b.alerts["controllerErrorWindow"])

    def metric(self, name: str, **labels: str) -> str:
        return series(name, {**self.job, **labels})

    def no_leader(self, alert: str, metric: str) -> list[Case]:
        """The Lease alert (alerts/controllers.no_leader), leader gauge `metric`, two replicas:
        both standing by fires; one leader beside one standing by stays silent."""
        end = self.end

        def leader(value: int, replica: str) -> tuple[str, str]:
            return (self.metric(metric, pod=f"{self.job['job']}-{replica}"), f"{value}x{end}")

        fired = [Expect({"severity": "warning"})]
        return [
            Case(alert, "both replicas standing by", [leader(0, "a"), leader(0, "b")], end, fired),
            Case(alert, "one leader, one standing by", [leader(1, "a"), leader(0, "b")], end),
        ]

    def blind(self, alert: str, metric: str, labels: dict[str, str], *beside: tuple[str, str]) -> list[Case]:
        """The blind alert (time() - max(`metric`) > blind_after): the last good pass at minute
        0 (promtool's time 0 is the Unix epoch) and none since fires with `labels`; a good pass
        every minute stays silent. `beside`: the other series the alert reads (the gate's open
        state), the same in both."""
        end, last = self.end, self.metric(metric)
        return [
            Case(alert, "no good pass since minute 0", [*beside, (last, f"0x{end}")], end, [Expect(labels)]),
            Case(alert, "a good pass every minute", [*beside, (last, f"0+60x{end}")], end),
        ]

    def failing(self, alert: str, metric: str) -> list[Case]:
        """The error alert (Queries.failing: failures per stage within
        monitoring.alerts.controllerErrorWindow, above 0): a failed node patch every minute
        fires with stage nodes and the window's count as the value; none stays silent."""
        end = self.end
        fired = [Expect({"stage": "nodes", "severity": "warning"}, humanize(self.error_window))]
        return [
            Case(
                alert,
                "node patches failing",
                [(self.metric(metric, stage="nodes"), f"0+1x{end}")],
                end,
                fired,
            ),
            Case(alert, "no failures", [(self.metric(metric, stage="nodes"), f"0x{end}")], end),
        ]


def expand(template: str, labels: dict[str, str], value: str) -> str:
    """Alert template expansion, as far as our annotations use it."""
    text = re.sub(
        r"\{\{ \$labels\.([a-zA-Z_][a-zA-Z0-9_]*) \}\}", lambda m: labels.get(m.group(1), ""), template
    )
    return re.sub(r"\{\{ \$value \| humanize(Percentage)? \}\}", value, text)


def annotations_of(rules: list[dict[str, Any]], alert: str, labels: dict[str, str]) -> dict[str, str]:
    """The annotations of the one rule named `alert` whose static labels the alert carries."""
    found = [
        r
        for r in rules
        if r.get("alert") == alert and all(labels.get(k) == v for k, v in r.get("labels", {}).items())
    ]
    assert len(found) == 1, f"{alert} {labels}: {len(found)} rules match"
    return dict(found[0]["annotations"])


def promtool_tests(cases: list[Case], rules: list[dict[str, Any]], rule_file: str) -> dict[str, Any]:
    """A promtool test file: one test per case (its own series), one alert_rule_test each."""
    tests = []
    for case in cases:
        expected = []
        for exp in case.fires:
            notes = annotations_of(rules, case.alert, exp.labels)
            expected.append(
                {
                    "exp_labels": exp.labels,
                    "exp_annotations": {k: expand(v, exp.labels, exp.value) for k, v in notes.items()},
                }
            )
        tests.append(
            {
                "name": f"{case.alert}: {case.title}",
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in case.series],
                "alert_rule_test": [
                    {"eval_time": f"{case.eval_minutes}m", "alertname": case.alert, "exp_alerts": expected}
                ],
            }
        )
    return {"rule_files": [rule_file], "evaluation_interval": "1m", "tests": tests}
