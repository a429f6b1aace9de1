"""Dashboards as rendered: UIDs, variables, thresholds from the spec, sizes, determinism."""

from __future__ import annotations

import json
import re

import yaml

from generators.components.monitoring import dcgm_counters, generate
from generators.model import exporters
from tests.monitoring.conftest import Shipped
from tests.monitoring.rendered_views import dashboards, panels
from tests.support import ROOT

UID = re.compile(r"^[a-zA-Z0-9_-]{1,40}$")
CLIENT_SIDE_APPLY_LIMIT = 262144
CONFIGMAP_LIMIT = 1024 * 1024
SSA = ("argocd.argoproj.io/sync-options", "ServerSideApply=true")


def test_delivery_matches_the_spec(shipped: Shipped) -> None:
    spec = shipped.spec["monitoring"]["dashboards"]
    boards = dashboards(shipped)
    assert len(boards) >= 5
    if spec["delivery"] == "sidecar":
        maps = [o for o in shipped.of_kind("ConfigMap") if any(k.endswith(".json") for k in o["data"])]
        assert len(maps) == len(boards)
        for obj in maps:
            assert all(obj["metadata"]["labels"][k] == v for k, v in spec["sidecarLabels"].items())
            assert obj["metadata"]["annotations"][spec["sidecarFolderAnnotation"]] == spec["folder"]
    else:
        for obj in shipped.of_kind("GrafanaDashboard"):
            assert obj["spec"]["instanceSelector"] == {"matchLabels": spec["instanceSelector"]}
            assert obj["spec"]["uid"] == json.loads(obj["spec"]["json"])["uid"]
            assert obj["spec"]["folder"] == spec["folder"]


def test_uids_unique_short_and_prefixed(shipped: Shipped) -> None:
    uids = [b["uid"] for b in dashboards(shipped)]
    assert len(uids) == len(set(uids))
    prefix = shipped.spec["monitoring"]["dashboards"]["uidPrefix"]
    for uid in uids:
        assert UID.match(uid) and uid.startswith(prefix + "-"), uid


def test_current_schema_variables_and_panel_ids(shipped: Shipped) -> None:
    for board in dashboards(shipped):
        assert board["schemaVersion"] == 42
        variables = {v["name"]: v for v in board["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource"
        ids = [p["id"] for p in board["panels"]]
        assert len(ids) == len(set(ids)), board["uid"]
        for panel in panels(board):
            assert panel["type"] in {"timeseries", "stat", "table"}, panel["type"]  # no deprecated graph
            assert panel["datasource"]["uid"] == "${datasource}"
            assert panel["targets"], panel["title"]


def test_host_variable_uses_the_host_label_of_the_named_exporter(shipped: Shipped) -> None:
    host_label = exporters.dcgm_exporter(
        shipped.spec["monitoring"]["exporters"]["dcgmExporter"]
    ).release.host_label
    board = next(b for b in dashboards(shipped) if b["uid"].endswith("-gpu-hardware"))
    host = next(v for v in board["templating"]["list"] if v["name"] == "host")
    assert host["query"].endswith(f", {host_label})")


def test_temperature_threshold_is_the_spec_value(shipped: Shipped) -> None:
    limit = shipped.spec["monitoring"]["gpuTempLimitCelsius"]
    board = next(b for b in dashboards(shipped) if b["uid"].endswith("-gpu-hardware"))
    temp = next(p for p in panels(board) if p["title"] == "GPU temperature")
    steps = temp["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert steps[-1]["value"] == limit
    assert temp["fieldConfig"]["defaults"]["custom"]["thresholdsStyle"]["mode"] == "line"
    over = next(p for p in panels(board) if p["title"] == f"GPUs above {limit} °C")
    assert f"> {limit})" in over["targets"][0]["expr"]


def test_sizes_under_apply_and_configmap_limits(shipped: Shipped) -> None:
    for obj in shipped.objects:
        size = len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())
        assert size < CONFIGMAP_LIMIT, obj["metadata"]["name"]
        annotated = obj["metadata"].get("annotations", {}).get(SSA[0]) == SSA[1]
        assert size < CLIENT_SIDE_APPLY_LIMIT or annotated, (obj["metadata"]["name"], size)


def test_deterministic(shipped: Shipped) -> None:
    assert generate(shipped.env) == generate(shipped.env)
    text = json.dumps(dashboards(shipped), sort_keys=True)
    assert not re.search(r"20[0-9]{2}-[01][0-9]-[0-3][0-9]T", text)  # no timestamps


def test_counters_csv_covers_every_dcgm_field_used(shipped: Shipped) -> None:
    used = set()
    for board in dashboards(shipped):
        for panel in panels(board):
            used |= {m for t in panel["targets"] for m in re.findall(r"\bDCGM_[A-Z0-9_]+", t["expr"])}
    rule = shipped.of_kind("PrometheusRule")[0]
    used |= {
        m
        for g in rule["spec"]["groups"]
        for r in g["rules"]
        for m in re.findall(r"\bDCGM_[A-Z0-9_]+", r["expr"])
    }
    assert used <= dcgm_counters.fields(), used - dcgm_counters.fields()
    # the GPU operator's chart writes the CSV from the rendered values (docs/monitoring.md)
    path = ROOT / "rendered" / shipped.name / "installers" / "gpu-operator-values.yaml"
    values = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert values["dcgmExporter"]["config"]["data"] == dcgm_counters.csv_text()
    assert not [o for o in shipped.of_kind("ConfigMap") if dcgm_counters.CSV_KEY in o.get("data", {})]


def test_docs_list_every_panel() -> None:
    from tests.monitoring.conftest import ENVIRONMENTS, load_shipped

    docs = (ROOT / "docs" / "monitoring.md").read_text()
    for name in ENVIRONMENTS:
        for board in dashboards(load_shipped(name)):
            assert f"`{board['uid']}`" in docs or board["uid"].split("-", 1)[1] in docs, board["uid"]
            for panel in panels(board):
                title = re.sub(r"\d+ °C", "78 °C", panel["title"])  # the docs show the default
                title = re.sub(r" \([^)]*\)$", "", title.split(":")[0])
                assert title in docs, (board["uid"], panel["title"])


def test_per_job_panels_leave_out_the_exporters_own_pod(shipped: Shipped) -> None:
    """Every query of the utilization dashboard's per-job row and its namespace picker keeps
    only GPUs a pod holds: with honorLabels an idle GPU carries the exporter pod's namespace
    (monitoring.dcgmExporter.namespace), so that namespace is excluded as well as the empty one
    (tests/monitoring/test_utilization_live.py scrapes it)."""
    operator = shipped.spec["monitoring"]["dcgmExporter"]["namespace"]
    held = f'namespace!="", namespace!="{operator}"'
    [board] = [b for b in dashboards(shipped) if b["uid"].endswith("-utilization")]
    titles = (
        "Tensor-core activity by namespace",
        "SM active by namespace",
        "Jobs: busy vs working",
        "Stragglers",
    )
    per_job = [p for p in panels(board) if p["title"].startswith(titles)]
    assert len(per_job) == len(titles)
    for panel in per_job:
        for target in panel["targets"]:
            assert target["expr"].count("DCGM_") == target["expr"].count(held), (
                panel["title"],
                target["expr"],
            )
    [picker] = [v for v in board["templating"]["list"] if v["name"] == "namespace"]
    assert held in picker["query"]
