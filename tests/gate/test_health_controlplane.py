"""The NodeHealthPolicy controller as a process (python -m trainyard_gate) against the REAL
kube-apiserver and a REAL Prometheus scraping DCGM-like GPU temperature series the test
sets over time.

Scenes, each a few seconds long (quarantine and release after QUARANTINE_SECONDS /
RELEASE_SECONDS, one query per second, the controller holding its Lease):
- one node's GPU above the limit for longer than quarantineAfterSeconds: that node, and
  only it, gets `trainyard.dev/gpu-health=gpu-temperature:NoSchedule` and both annotations;
  back to normal for releaseAfterSeconds: taint and annotations removed;
- a fleet-wide spike: at most the cap is tainted, trainyard_health_held_back > 0;
- Prometheus down: nothing changes on any node (resourceVersions identical).

The policy text is prod's rendered ConfigMap `gpu-health-policy` (the `health_policy_text`
fixture). The test only swaps what
a test must: the Prometheus URL, the durations, the cap, and one extra label in each pool's
selector so only this test's nodes match. Nodes that must stay untouched are checked by
resourceVersion: the controller never patched them.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from box.kube import Kube, wait_for
from tests.controlplane.harness import ControlPlane
from tests.support import ROOT
from tests.support.prometheus import Prometheus, prometheus_server

from .conftest import Exporter, scrape_config
from .program import GateProgram, gate_program

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

TEMPERATURE = "DCGM_FI_DEV_GPU_TEMP"
LIMIT_CELSIUS = 78
HOT, NORMAL = 80.0, 65.0
REASON = "gpu-temperature"
KEY = "trainyard.dev/gpu-health"
QUARANTINE_SECONDS = 3
RELEASE_SECONDS = 3
STEP_SECONDS = 30  # generous bound for one scene step (3 s hold + 1 s scrape + 1 s pass)
RUN_LABEL = "trainyard.dev/health-test-run"
OTHER_TAINT = {"key": "example.com/other", "value": "kept", "effect": "NoSchedule"}  # must survive


RENDERED_POLICY = (
    ROOT / "rendered" / "prod" / "health" / "trainyard-system" / "configmap-gpu-health-policy.yaml"
)


def rendered_policy() -> str:
    """Prod's NodeHealthPolicy as rendered (every condition, prod's pool selectors and the
    generator's PromQL over dcgm-exporter's labels)."""
    text: str = yaml.safe_load(RENDERED_POLICY.read_text(encoding="utf-8"))["data"]["policy.yaml"]
    return text


def temperature_query() -> str:
    conditions = yaml.safe_load(rendered_policy())["spec"]["conditions"]
    query: str = next(c["query"] for c in conditions if c["reason"] == REASON)
    assert TEMPERATURE in query and query.endswith(f"> {LIMIT_CELSIUS}"), query
    return query


@pytest.fixture
def health_policy_text() -> str:
    return rendered_policy()


def dcgm_job() -> str:
    """The scrape job the rendered queries select dcgm-exporter by."""
    found = re.search(rf'{TEMPERATURE}{{job="([^"]+)"', temperature_query())
    assert found is not None
    return found[1]


@pytest.fixture(scope="module")
def dcgm() -> Iterator[Exporter]:
    """A dcgm-exporter stand-in: DCGM_FI_DEV_GPU_TEMP{node, gpu} as the test sets it."""
    with Exporter(TEMPERATURE) as served:
        yield served


@pytest.fixture(scope="module")
def prometheus(dcgm: Exporter, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    """A real Prometheus (the pinned build) scraping the DCGM stand-in every second."""
    with prometheus_server(
        tmp_path_factory.mktemp("health-prometheus"), scrape_config(dcgm.port, dcgm_job())
    ) as served:
        yield served


@dataclass
class Scene:
    kube: Kube
    dcgm: Exporter
    prometheus: Prometheus
    program: GateProgram  # the controller process and its /metrics
    pools: dict[str, list[str]]  # pool name -> node names
    conditions: int  # queries per pass

    @property
    def nodes(self) -> list[str]:
        return [name for names in self.pools.values() for name in names]

    def temperatures(self, hot: set[str]) -> None:
        """Every node's GPU 0 reports HOT if in `hot`, else NORMAL; no series ever vanishes.
        Labels as dcgm-exporter's, plus `node` (what the scrape config adds in-cluster)."""
        labels = 'gpu="0",UUID="GPU-{0}-0",Hostname="{0}",node="{0}"'
        self.dcgm.set_series([(labels.format(name), HOT if name in hot else NORMAL) for name in self.nodes])

    def node(self, name: str) -> dict[str, Any]:
        found = self.kube.get("v1", "Node", name)
        assert found is not None
        return found

    def health(self, name: str) -> tuple[str | None, str | None, str | None]:
        """(value of our NoSchedule taint, reason annotation, since annotation)."""
        node = self.node(name)
        ours = [
            t.get("value")
            for t in node["spec"].get("taints") or []
            if t["key"] == KEY and t["effect"] == "NoSchedule"
        ]
        assert len(ours) <= 1, node["spec"]["taints"]
        notes = node["metadata"].get("annotations") or {}
        return (ours[0] if ours else None, notes.get(f"{KEY}-reason"), notes.get(f"{KEY}-since"))

    def quarantined(self) -> list[str]:
        return [name for name in self.nodes if self.health(name)[0] is not None]

    def versions(self) -> dict[str, str]:
        return {name: self.node(name)["metadata"]["resourceVersion"] for name in self.nodes}

    def sample(self, name: str, **labels: str) -> float | None:
        return self.program.sample(name, **labels)

    def passes(self, count: int, *, ok: bool) -> None:
        """Wait until the controller has made `count` more passes (good or failed queries)."""
        if ok:
            stamps: set[float] = set()

            def seen() -> bool:
                stamp = self.sample("trainyard_health_last_success_timestamp_seconds")
                if stamp:
                    stamps.add(stamp)
                return len(stamps) > count  # the first one seen may predate the call
        else:
            start = self.sample("trainyard_health_errors_total", stage="query") or 0.0

            def seen() -> bool:
                errors = self.sample("trainyard_health_errors_total", stage="query") or 0.0
                return errors >= start + count * self.conditions  # every query of a pass fails

        wait_for(seen, STEP_SECONDS + 2 * count, f"{count} controller passes", interval=0.2)


@pytest.fixture
def scene(
    health_policy_text: str,
    kube: Kube,
    control_plane: ControlPlane,
    dcgm: Exporter,
    prometheus: Prometheus,
    tmp_path: Path,
) -> Iterator[Scene]:
    """Two pools of this test's nodes (4 + 2), the controller running on them, all GPUs normal."""
    run = uuid.uuid4().hex[:8]
    policy = yaml.safe_load(health_policy_text)
    spec = policy["spec"]
    spec["prometheus"]["url"] = prometheus.url
    spec["prometheus"]["timeoutSeconds"] = 1
    spec["reconcileIntervalSeconds"] = 1
    for condition in spec["conditions"]:
        condition["quarantineAfterSeconds"] = QUARANTINE_SECONDS
    spec["releaseAfterSeconds"] = RELEASE_SECONDS
    spec["cap"] = {"maxNodes": 2, "maxPercentOfPool": 50}  # pools of 4 and 2: caps 2 and 1
    spec["pools"] = spec["pools"][:2]
    pools: dict[str, list[str]] = {}
    for pool, size in zip(spec["pools"], (4, 2), strict=True):
        pool["nodeSelector"]["matchLabels"][RUN_LABEL] = run
        labels = pool["nodeSelector"]["matchLabels"]
        pools[pool["name"]] = [f"health-{run}-{pool['name']}-{index}" for index in range(size)]
        for name in pools[pool["name"]]:
            kube.create(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": labels},
                    "spec": {"taints": [OTHER_TAINT]},
                }
            )
    policy_path = tmp_path / "policy.yaml"
    policy_path.write_text(yaml.safe_dump(policy), encoding="utf-8")
    program = gate_program(
        "trainyard-gate-health",
        policy_path,
        control_plane.kubeconfig,
        tmp_path / "health.log",
        "--lease-namespace=default",
        f"--lease-name=gpu-health-{run}",
        f"--identity=health-{run}",
    )
    controller = program.daemon
    made = Scene(kube, dcgm, prometheus, program, pools, len(spec["conditions"]))
    made.temperatures(hot=set())
    controller.start()
    try:
        controller.wait_until(lambda: made.sample("trainyard_health_query_success") == 1, 60, "a good pass")
        # It acts as the holder of its Lease, as the rendered Deployment runs it.
        assert made.sample("trainyard_health_leader") == 1
        lease = kube.get("coordination.k8s.io/v1", "Lease", f"gpu-health-{run}", "default")
        assert lease is not None and lease["spec"]["holderIdentity"] == f"health-{run}"
        yield made
        assert controller.running(), controller.log_tail()
    finally:
        controller.stop()
        for name in made.nodes:
            kube.delete("v1", "Node", name)
        kube.delete("coordination.k8s.io/v1", "Lease", f"gpu-health-{run}", "default")


def test_one_hot_gpu_quarantines_that_node_only_and_releases_it(scene: Scene) -> None:
    train = next(iter(scene.pools))
    hot = scene.pools[train][1]
    before, taints_before = scene.versions(), scene.node(hot)["spec"]["taints"]
    assert OTHER_TAINT in taints_before  # with the apiserver's own not-ready taint
    scene.passes(2, ok=True)
    assert scene.quarantined() == [] and scene.versions() == before  # all normal: no patch

    went_hot = time.time()
    scene.temperatures(hot={hot})
    wait_for(lambda: scene.health(hot)[0] is not None, STEP_SECONDS, "the hot node tainted")
    assert time.time() - went_hot >= QUARANTINE_SECONDS  # held at least the duration
    value, reason, since = scene.health(hot)
    assert (value, reason) == (REASON, REASON)
    assert since is not None and since.endswith("Z")
    assert int(went_hot) <= datetime.fromisoformat(since).timestamp() <= time.time()
    others = [taint for taint in scene.node(hot)["spec"]["taints"] if taint["key"] != KEY]
    assert others == taints_before  # other writers' taints untouched, in order
    scene.passes(2, ok=True)
    assert scene.quarantined() == [hot]  # only it, and the others were never patched
    after = scene.versions()
    assert {n: v for n, v in after.items() if n != hot} == {n: v for n, v in before.items() if n != hot}
    node_labels = {"node": hot, "pool": train, "reason": REASON}
    assert scene.sample("trainyard_health_quarantined", **node_labels) == 1
    assert scene.sample("trainyard_health_bad_nodes", reason=REASON) == 1
    assert scene.sample("trainyard_health_node_patches_total", action="quarantine") == 1

    cooled = time.time()
    scene.temperatures(hot=set())
    wait_for(lambda: scene.health(hot) == (None, None, None), STEP_SECONDS, "taint and annotations removed")
    assert time.time() - cooled >= RELEASE_SECONDS
    assert scene.sample("trainyard_health_quarantined", **node_labels) is None
    assert scene.sample("trainyard_health_node_patches_total", action="release") == 1
    assert scene.node(hot)["spec"]["taints"] == taints_before


def test_fleet_wide_spike_is_capped_and_an_outage_changes_nothing(scene: Scene) -> None:
    scene.temperatures(hot=set(scene.nodes))  # every GPU of both pools too hot
    wait_for(lambda: len(scene.quarantined()) == 2, STEP_SECONDS, "the cap's worth of nodes tainted")
    scene.passes(3, ok=True)
    tainted = scene.quarantined()
    assert len(tainted) == 2  # maxNodes, though six qualify
    train, infer = scene.pools
    assert sum(name in scene.pools[infer] for name in tainted) <= 1  # 50 % of 2
    held = {pool: scene.sample("trainyard_health_held_back", pool=pool) or 0 for pool in scene.pools}
    assert sum(held.values()) == 4, held
    assert scene.sample("trainyard_health_cap_fleet") == 2
    assert scene.sample("trainyard_health_cap", pool=train) == 2
    assert scene.sample("trainyard_health_cap", pool=infer) == 1
    assert scene.sample("trainyard_health_pool_nodes", pool=train) == 4
    assert scene.sample("trainyard_health_bad_nodes", reason=REASON) == 6

    # Prometheus goes away while the fleet is quarantined to its cap. A controller that read
    # the failure as "nothing is bad" would release after RELEASE_SECONDS; hold changes nothing.
    before = scene.versions()
    scene.prometheus.stop()
    try:
        scene.temperatures(hot=set())
        scene.passes(2 * RELEASE_SECONDS, ok=False)
        assert scene.sample("trainyard_health_query_success") == 0
        assert scene.versions() == before
        assert scene.quarantined() == tainted
    finally:
        scene.prometheus.start()
