"""Quotas, cohort tree and TAS split of a small spec, against numbers worked out by hand.

The spec (SPEC, tests/oracles/quota_spec.py): pool `train` (training, topology) 13 nodes, 1 in
reserve, so 12 schedulable, 8 GPUs + 8 rdma/ib + 96 CPU + 1Ti per node; pool `serve`
(inference) 10 nodes, 4 GPUs + 64 CPU + 512Gi per node. Teams are written zeta, mid, alpha (not name order).

Largest remainder, by hand:
  train, 12 nodes: alpha 25% = 3.0, mid 40% = 4.8, zeta 35% = 4.2 -> floors 3, 4, 4 = 11;
      the leftover node goes to the largest remainder (mid .8): alpha 3, mid 5, zeta 4.
  serve, 10 nodes: alpha 25% = 2.5, mid 50% = 5.0, zeta 25% = 2.5 -> floors 2, 5, 2 = 9;
      the leftover goes to a tie (.5, .5) broken by NAME: alpha 3, mid 5, zeta 2.
Limits:
  mid lendablePercent 70: train floor(5 x 0.7) = floor(3.5) = 3 nodes; serve floor(3.5) = 3.
  zeta maxUsagePercent 60: train floor(12 x 0.6) = 7 nodes - own 4 = 3 to borrow;
      serve floor(10 x 0.6) = 6 - own 2 = 4.
  alpha maxUsagePercent 25 (its share: the spec refuses less): train floor(12 x 0.25) = 3
      = own 3: borrowing limit 0; serve floor(2.5) = 2 < own 3 (the tie went to alpha): 0,
      never negative.
  probe (a 0% share of serve, borrowFrom [train], maxUsagePercent 50): train floor(6) - 0
      = 6 nodes; serve floor(5) - 0 = 5 nodes.
"""

from __future__ import annotations

import pytest
import yaml

from tests.oracles.quota_spec import SPEC
from tests.oracles.spec import Objects, cells, rendered


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> Objects:
    return rendered(tmp_path_factory.mktemp("oracle"), SPEC)


def test_nominal_quotas_are_whole_nodes_by_largest_remainder(objects: Objects) -> None:
    expected = {  # (queue, flavor) -> nodes, from the module docstring
        ("alpha", "train"): 3,
        ("mid", "train"): 5,
        ("zeta", "train"): 4,
        ("alpha-flex", "serve"): 3,
        ("mid-flex", "serve"): 5,
        ("zeta-flex", "serve"): 2,
    }
    per_node = {
        "train": {"nvidia.com/gpu": 8, "cpu": 96, "rdma/ib": 8},
        "serve": {"nvidia.com/gpu": 4, "cpu": 64, "rdma/ib": 0},
    }
    for (queue, flavor), nodes in expected.items():
        got = cells(objects[("ClusterQueue", queue)])
        amounts = per_node[flavor]
        for resource in ("nvidia.com/gpu", "cpu", "rdma/ib"):
            assert got[(flavor, resource)]["nominalQuota"] == str(nodes * amounts[resource]), queue
        # the apiserver's canonical form: the largest binary suffix with a whole mantissa
        memory = {
            ("train", 3): "3Ti",
            ("train", 4): "4Ti",
            ("train", 5): "5Ti",
            ("serve", 2): "1Ti",
            ("serve", 3): "1536Gi",
            ("serve", 5): "2560Gi",
        }[(flavor, nodes)]
        assert got[(flavor, "memory")]["nominalQuota"] == memory, queue


def test_literal_cells_of_one_queue(objects: Objects) -> None:
    """The whole of mid's training queue, written out: 5 nodes, lending floor(3.5) = 3."""
    assert cells(objects[("ClusterQueue", "mid")]) == {
        ("train", "nvidia.com/gpu"): {"nominalQuota": "40", "lendingLimit": "24"},
        ("train", "cpu"): {"nominalQuota": "480", "lendingLimit": "288"},
        ("train", "memory"): {"nominalQuota": "5Ti", "lendingLimit": "3Ti"},
        ("train", "rdma/ib"): {"nominalQuota": "40", "lendingLimit": "24"},
    }


def test_lending_limit_is_floored(objects: Objects) -> None:
    serve = cells(objects[("ClusterQueue", "mid-flex")])[("serve", "nvidia.com/gpu")]
    assert serve == {"nominalQuota": "20", "lendingLimit": "12"}  # 5 nodes, floor(3.5) = 3 x 4 GPUs


def test_borrowing_limit_is_floored_ceiling_minus_own_never_negative(objects: Objects) -> None:
    zeta = cells(objects[("ClusterQueue", "zeta")])[("train", "nvidia.com/gpu")]
    assert zeta == {"nominalQuota": "32", "borrowingLimit": "24"}  # 4 own, 7 - 4 = 3 nodes
    zeta_flex = cells(objects[("ClusterQueue", "zeta-flex")])[("serve", "nvidia.com/gpu")]
    assert zeta_flex == {"nominalQuota": "8", "borrowingLimit": "16"}  # 2 own, 6 - 2 = 4 nodes
    alpha = cells(objects[("ClusterQueue", "alpha")])[("train", "nvidia.com/gpu")]
    assert alpha == {"nominalQuota": "24", "borrowingLimit": "0"}  # own 3 above the ceiling 2
    probe = cells(objects[("ClusterQueue", "probe")])[("train", "nvidia.com/gpu")]
    assert probe == {"nominalQuota": "0", "borrowingLimit": "48"}  # borrowFrom only: 6 nodes
    probe_flex = cells(objects[("ClusterQueue", "probe-flex")])[("serve", "nvidia.com/gpu")]
    assert probe_flex == {"nominalQuota": "0", "borrowingLimit": "20"}  # 0% share: 5 nodes


def test_no_limit_renders_no_limit(objects: Objects) -> None:
    """A team without maxUsagePercent / lendablePercent gets no borrowing / lending limit."""
    assert "borrowingLimit" not in cells(objects[("ClusterQueue", "mid")])[("train", "cpu")]
    assert "lendingLimit" not in cells(objects[("ClusterQueue", "zeta")])[("train", "cpu")]


def test_cohort_tree(objects: Objects) -> None:
    assert objects[("Cohort", "research")]["spec"] == {"parentName": "root"}
    assert objects[("Cohort", "root")]["spec"] in ({}, None)
    queues = ("alpha", "alpha-flex", "mid", "mid-flex", "zeta", "zeta-flex", "probe", "probe-flex")
    cohort_of = {q: objects[("ClusterQueue", q)]["spec"].get("cohortName") for q in queues}
    assert cohort_of == {
        "alpha": "root",
        "alpha-flex": "root",
        "mid": "research",
        "mid-flex": "research",
        "zeta": "research",
        "zeta-flex": "research",
        "probe": "research",
        "probe-flex": "research",
    }


def test_topology_pools_and_plain_pools_go_to_separate_queues(objects: Objects) -> None:
    queues = {name: obj for (kind, name), obj in objects.items() if kind == "ClusterQueue"}
    assert sorted(queues) == [
        "alpha",
        "alpha-flex",
        "mid",
        "mid-flex",
        "probe",
        "probe-flex",
        "zeta",
        "zeta-flex",
    ]
    for name, queue in queues.items():
        flavors = [f["name"] for g in queue["spec"]["resourceGroups"] for f in g["flavors"]]
        placement = queue["metadata"]["annotations"]["trainyard.dev/placement"]
        if name.endswith("-flex"):
            assert (flavors, placement) == (["serve"], "any-node"), name
        else:
            assert (flavors, placement) == (["train"], "topology"), name
    local = {
        (o["metadata"]["namespace"], o["spec"]["clusterQueue"])
        for (k, _), o in objects.items()
        if k == "LocalQueue"
    }
    assert local == {
        ("alpha", "alpha"),
        ("alpha", "alpha-flex"),
        ("mid", "mid"),
        ("mid", "mid-flex"),
        ("zeta", "zeta"),
        ("zeta", "zeta-flex"),
        ("probe", "probe"),
        ("probe", "probe-flex"),
    }


def test_flavors_and_topology(objects: Objects) -> None:
    assert objects[("ResourceFlavor", "train")]["spec"]["topologyName"] == "train"
    assert "topologyName" not in objects[("ResourceFlavor", "serve")]["spec"]
    assert objects[("Topology", "train")]["spec"]["levels"] == [
        {"nodeLabel": "example.com/block"},
        {"nodeLabel": "example.com/rack"},
        {"nodeLabel": "kubernetes.io/hostname"},
    ]
    assert ("Topology", "serve") not in objects


def test_borrowing_preempts_only_up_to_the_highest_inference_tier(objects: Objects) -> None:
    """_defaults.yaml's tiers: inference-prod 100000 is the highest inference tier."""
    preemption = objects[("ClusterQueue", "zeta")]["spec"]["preemption"]
    assert preemption == {
        "reclaimWithinCohort": "Any",
        "withinClusterQueue": "LowerPriority",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100000},
    }


def test_controller_configuration_is_the_environments(objects: Objects) -> None:
    """The Helm values carry the spec's waitForPodsReady and integrations, the rest defaults."""
    [values] = [o for (kind, _), o in objects.items() if kind == "installers/kueue-values.yaml"]
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert config["waitForPodsReady"] == {
        "timeout": "20m",
        "recoveryTimeout": "10m",
        "blockAdmission": True,
        "requeuingStrategy": {
            "timestamp": "Eviction",
            "backoffLimitCount": 5,
            "backoffBaseSeconds": 60,
            "backoffMaxSeconds": 3600,
        },
    }
    assert config["integrations"] == {"frameworks": ["batch/job"]}
    assert config["manageJobsWithoutQueueName"] is False and config["namespace"] == "kueue-system"
