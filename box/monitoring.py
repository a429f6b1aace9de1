"""A real Prometheus scraping a real kube-state-metrics, beside the box.

kube-state-metrics is the one the pinned kube-prometheus-stack chart (../shared/charts,
`helm template` with rendered/<env>/installers/kube-prometheus-stack-values.yaml) deploys:
its ServiceAccount, ClusterRole and binding are applied as the chart renders them, and the
pinned build runs with the chart Deployment's arguments (so the rendered
`metricLabelsAllowlist` decides which node labels become `label_*`), as that ServiceAccount
(box/controllers.py).

Prometheus (the pinned v3.16.0 server) has no operator here to turn ServiceMonitors into
scrape jobs, so the box writes the scrape job the chart's ServiceMonitor means: job
`kube-state-metrics` (the label the rendered queries select on) at the process's port, and
one for the box's synthetic dcgm-exporter (box/dcgm_fake.py) under the job the
rendered DCGM queries select. It loads the rendered alert rules file (ConfigMap
trainyard-alerts-rules-file), so a broken rule stops `box up`. Up once a query returns one
`kube_node_labels` series per node: the whole path (apiserver, kube-state-metrics, a scrape,
the TSDB) has worked once.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import yaml

from box import charts
from box.daemon import Daemon, free_port
from box.kube import Obj
from generators.components.monitoring import KUBE_PROMETHEUS_STACK_VALUES
from tools.toolchain import tool_path

CHART = "kube-prometheus-stack-88.5.3.tgz"
VALUES = KUBE_PROMETHEUS_STACK_VALUES  # rendered/<env>/installers/<this>
RELEASE = "kube-prometheus-stack"
KSM_NAME = "kube-state-metrics"  # app.kubernetes.io/name of the chart's KSM objects
KSM_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding")
RULES_CONFIG_MAP = "trainyard-alerts-rules-file"
SCRAPE_SECONDS = 5  # a box reacts in seconds, not a production minute
# Scenes' synthetic exporters (box/series.py): file_sd files a scene writes into
# <prometheus folder>/scene-targets/ while it runs; Prometheus watches the folder.
SCENE_JOB = "box-scene"
SCENE_TARGETS = "scene-targets"
READY_SECONDS = 120


def template(values: Path | None, namespace: str) -> list[Obj]:
    """Every object the pinned kube-prometheus-stack chart renders for these values."""
    return charts.template(CHART, RELEASE, values, namespace)


def kube_state_metrics(chart: list[Obj]) -> tuple[list[Obj], Obj]:
    """The chart's kube-state-metrics RBAC objects, and its Deployment."""
    mine = [o for o in chart if (o["metadata"].get("labels") or {}).get("app.kubernetes.io/name") == KSM_NAME]
    [deployment] = [o for o in mine if o["kind"] == "Deployment"]
    return [o for o in mine if o["kind"] in KSM_KINDS], deployment


def rule_files(objects: list[Obj], folder: Path) -> list[Path]:
    """The rendered alert rules, as the files Prometheus loads."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for obj in objects:
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == RULES_CONFIG_MAP:
            for key, text in sorted((obj.get("data") or {}).items()):
                (folder / key).write_text(text, encoding="utf-8")
                paths.append(folder / key)
    return paths


def prometheus(ksm_port: int, rules: list[Path], folder: Path, jobs: Sequence[Obj] = ()) -> Daemon:
    """A Prometheus (not started) scraping kube-state-metrics on 127.0.0.1:`ksm_port`, and
    `jobs` (scrape configs of the box's other exporters, e.g. dcgm_fake.scrape_job)."""
    # The scenes' folder exists from the start, so Prometheus's file watch on it works and
    # a scene's targets are discovered when written (on a missing folder the watch fails,
    # logged every 5 s, and discovery falls back to the 5 s refresh).
    (folder / SCENE_TARGETS).mkdir(parents=True, exist_ok=True)
    config = {
        "global": {"scrape_interval": f"{SCRAPE_SECONDS}s", "evaluation_interval": f"{SCRAPE_SECONDS}s"},
        "rule_files": [str(p) for p in rules],
        "scrape_configs": [
            {"job_name": KSM_NAME, "static_configs": [{"targets": [f"127.0.0.1:{ksm_port}"]}]},
            *jobs,
            {
                "job_name": SCENE_JOB,
                "file_sd_configs": [
                    {"files": [str(folder / SCENE_TARGETS / "*.json")], "refresh_interval": "5s"}
                ],
            },
        ],
    }
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    port = free_port()
    return Daemon(
        "prometheus",
        [
            str(tool_path("prometheus")),
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        folder / "prometheus.log",
        ports=(port,),
    )


def scene_targets(box_folder: Path) -> Path:
    """Where a scene writes its file_sd targets, in the box run folder `box_folder`
    (up.py starts Prometheus in <box folder>/monitoring/prometheus)."""
    return box_folder / "monitoring" / "prometheus" / SCENE_TARGETS


def query(url: str, promql: str) -> list[dict[str, object]]:
    """The instant vector `promql` evaluates to now."""
    with urllib.request.urlopen(
        f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}", timeout=5
    ) as response:
        body = json.load(response)
    result: list[dict[str, object]] = body["data"]["result"]
    return result
