"""Scene bad-node on `generate.py box up staging --speed 30`: a bad GPU node.

Real here: the health controller (gate/trainyard_gate with the rendered NodeHealthPolicy, as
ServiceAccount gpu-health, holding its Lease), Prometheus v3.16.0 evaluating the rendered
condition queries, Kueue v0.19.2's topology-aware admission, kube-scheduler v1.36.5, the
descheduler (evicting) and kube-controller-manager. Synthetic: the DCGM series, served by the
box's fake dcgm-exporter (box/dcgm_fake.py, declared so) with the names of the
rendered counters CSV and dcgm-exporter's GPU labels.

The scene runs through the CLI as a user runs it. While it runs, this module watches the
nodes itself (its own client, every half second) and reads the controller's own counters
before and after, so what is asserted is what the controllers did, not what the scene
printed. Expected values are staging's, divided by the speed by hand: gpuTemperature
quarantineAfterSeconds 300 / 30 = 10, releaseAfterSeconds 1800 / 30 = 60, health.cap
maxNodes 1 (and 5 % of 32 nodes = 1), 32 + 8 NVIDIA nodes of 8 GPUs.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field

import pytest
import yaml

from box import monitoring
from box.dcgm_fake import scrape_job
from box.kube import Kube
from box.scenes.bad_node import health_metrics
from tests.support import ROOT
from tests.support.box import UpBox, run_cli

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

BOX_ENV = ENV = "staging"  # the shared staging box at speed 30 (tests/box/conftest.py)
BOX_SPEED = 30
BOX_ARGOCD = True  # deployed by Argo CD: the Argo CD scenes share the box
SCENE_SECONDS = 900
TAINT = "trainyard.dev/gpu-health"
DCGM = 'job="nvidia-dcgm-exporter"'  # staging's monitoring.selectors.dcgm (the schema default)


def test_prometheus_scrapes_one_gpu_temperature_per_gpu_under_the_rendered_job(box: UpBox) -> None:
    """The rendered queries select `job="nvidia-dcgm-exporter"` and map `Hostname` to the node:
    every GPU of the 40 NVIDIA nodes is there under that job, and the rendered temperature
    condition (its text from rendered/staging) finds no node while every GPU is healthy."""
    url = box.state.prometheus
    assert len(monitoring.query(url, f"DCGM_FI_DEV_GPU_TEMP{{{DCGM}}}")) == 40 * 8
    hosts = monitoring.query(url, f"count by (Hostname) (DCGM_FI_DEV_GPU_TEMP{{{DCGM}}})")
    names = sorted(str(h["metric"]["Hostname"]) for h in hosts)  # type: ignore[index]
    expected = [f"train-h100-{i:03d}" for i in range(32)] + [f"infer-l40s-{i:03d}" for i in range(8)]
    assert names == sorted(expected)
    policy = yaml.safe_load(
        yaml.safe_load(
            (
                ROOT / "rendered" / ENV / "health" / "trainyard-system" / "configmap-gpu-health-policy.yaml"
            ).read_text()
        )["data"]["policy.yaml"]
    )
    [temperature] = [c["query"] for c in policy["spec"]["conditions"] if c["reason"] == "gpu-temperature"]
    assert monitoring.query(url, temperature) == []
    # an XID-free GPU still has its zero series, without `xid`, as dcgm-exporter writes it
    xids = monitoring.query(url, f"DCGM_EXP_XID_ERRORS_COUNT{{{DCGM}}}")
    assert len(xids) == 320 and all("xid" not in x["metric"] for x in xids)  # type: ignore[operator]


def test_the_fake_exporter_refuses_a_selector_a_scrape_cannot_produce() -> None:
    assert scrape_job('job="nvidia-dcgm-exporter", cluster="a"', 9400, "5s")["static_configs"] == [
        {"targets": ["127.0.0.1:9400"], "labels": {"cluster": "a"}}
    ]
    with pytest.raises(ValueError, match="equality selectors"):
        scrape_job('job=~"dcgm.*"', 9400, "5s")


@dataclass
class NodeWatch:
    """Every quarantine taint seen on any node, by an observer of its own."""

    kube: Kube
    stop: threading.Event = field(default_factory=threading.Event)
    seen: set[tuple[str, str]] = field(default_factory=set)  # (node, taint value)
    most_at_once: int = 0
    errors: list[str] = field(default_factory=list)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                tainted = {}
                for node in self.kube.list("v1", "Node"):
                    for taint in node["spec"].get("taints") or []:
                        if taint["key"] == TAINT:
                            tainted[node["metadata"]["name"]] = taint.get("value", "")
                self.seen |= set(tainted.items())
                self.most_at_once = max(self.most_at_once, len(tainted))
            except Exception as err:  # a watch that breaks is a failed test, not a silent one
                self.errors.append(repr(err))
            self.stop.wait(0.5)


def test_scene_bad_node_quarantines_keeps_training_off_releases_and_holds_the_cap(box: UpBox) -> None:
    [health] = [p for p in box.state.processes if p.name == "gpu-health"]
    metrics_url = f"http://127.0.0.1:{health.ports[0]}"
    before = health_metrics(metrics_url)
    watch = NodeWatch(Kube(box.kubeconfig, box.folder / "watch-discovery.json"))
    thread = threading.Thread(target=watch.run, daemon=True)
    thread.start()
    began = time.monotonic()
    try:
        done = run_cli("box", "scene", "bad-node", ENV, box_dir=box.box_dir, timeout=SCENE_SECONDS)
    finally:
        watch.stop.set()
        thread.join(10)
        watch.kube.close()
    out = done.stdout
    print(out, f"scene wall time {time.monotonic() - began:.0f}s", sep="\n")
    assert done.returncode == 0, out + done.stderr[-4000:]
    assert not watch.errors, watch.errors

    # What the nodes carried, seen from outside: the hot node as gpu-temperature, in the XID
    # spike the first node by name (oldest bad first, ties by name) as xid, never two at once.
    bad = re.search(r"^(train-h100-\d{3}): a GPU at the limit", out, re.MULTILINE)
    assert bad is not None, out
    assert watch.seen == {(bad.group(1), "gpu-temperature"), ("train-h100-000", "xid")}
    assert watch.most_at_once == 1  # staging's cap
    # What the controller counted: two quarantines, two releases, no refused patch.
    after = health_metrics(metrics_url)

    def grew(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert grew('trainyard_health_node_patches_total{action="quarantine"}') == 2
    assert grew('trainyard_health_node_patches_total{action="release"}') == 2
    assert grew('trainyard_health_errors_total{stage="nodes"}') == 0
    assert after['trainyard_health_cap{pool="train-h100"}'] == 1 and after["trainyard_health_cap_fleet"] == 1

    # The timeline, against the sped-up spec: quarantine no sooner than 10 s, release no
    # sooner than 60 s after the signal went.
    quarantined = re.search(
        r"quarantined after ([\d.]+)s \(gpu-temperature quarantineAfterSeconds (\d+)\)", out
    )
    released = re.search(r"released after ([\d.]+)s \(releaseAfterSeconds (\d+)\)", out)
    assert quarantined is not None and released is not None, out
    assert quarantined.group(2) == "10" and float(quarantined.group(1)) >= 10
    assert released.group(2) == "60" and float(released.group(1)) >= 60
    # The condition's alert (same query, for: = the duration) fired for the node in
    # Prometheus, no sooner than the duration; in the spike the XID alert fires for all three
    # while the cap lets one go.
    alert = re.search(r"alert GpuHealthGpuTemperature firing for it after ([\d.]+)s", out)
    assert alert is not None and float(alert.group(1)) >= 10, out
    assert "alert GpuHealthXid firing for 3 node(s): train-h100-000, train-h100-001, train-h100-002" in out
    # Kueue's topology-aware admission, not the scheduler, kept the pinned training Job off:
    # it counted the node out for the taint.
    assert 'taint "trainyard.dev/gpu-health=gpu-temperature:NoSchedule": 1' in out
    assert "training pods on it kept running: True" in out
    assert re.search(
        r"the pinned Job then ran on it: True \([\d.]+s after the release\); training pods "
        r"still running: True",
        out,
    ), out
    assert (
        "spike (xid): 3 nodes bad, 1 quarantined, held back 2 (cap: pool 1, fleet 1); "
        "quarantined: train-h100-000=xid  OK" in out
    )
    assert not re.search(r"EVICTED|LANDED|EARLY|NOT BACK|CAP BROKEN|NOT AS SPECIFIED|NO ALERT", out), out
