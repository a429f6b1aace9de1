"""The spec's cross-field checks (generators/model/checks/semantics.py): the cohort graph and the share
sums, on small specs written here, with the expected errors typed out by hand.

The bad-input corpus (tests/corpus/bad) holds one file per refusal; these cases are the
neighbours a one-line bug there lets through: shares summing UNDER 100, two partial shares
over 100, a cohort tree three levels deep, ancestors that loop without passing through the
cohort being checked, and a cap below the team's largest (not its smallest) share.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from generators.errors import SpecError
from generators.model.load import load
from tests.support import ROOT
from tests.support.scratch import write_environment

HEAD = """name: sem
cluster: {kubernetesVersion: "1.36.2"}
pools:
  - name: train
    role: training
    gpu: {model: H100, perNode: 8}
    nodes: 10
    cpu: 96
    memory: 1000Gi
    nodeLabels: {pool: train}
  - name: serve
    role: inference
    gpu: {model: L40S, perNode: 8}
    nodes: 4
    cpu: 96
    memory: 500Gi
    nodeLabels: {pool: serve}
"""
TIERS = """priorities:
  tiers:
    - {name: train, role: training, value: 1000}
    - {name: serve, role: inference, value: 100}
"""


def problems(tmp_path: Path, body: str) -> list[str]:
    """The one-line errors of environments/sem.yaml = HEAD + body + TIERS (empty: it loads)."""
    write_environment(tmp_path, "sem", HEAD + body + TIERS)
    try:
        load(tmp_path, "sem")
    except SpecError as exc:
        return [p.format() for p in exc.problems]
    return []


@pytest.mark.parametrize(
    ("a", "b", "error"),
    [
        pytest.param(
            60,
            30,  # 10 % of the pool would be in nobody's quota
            "team shares of pool 'train' sum to 90%, under 100% (pools[0].name); shares: a=60, b=30",
            id="summing_under_100",
        ),
        pytest.param(
            70,
            40,  # neither share alone above 100
            "team shares of pool 'train' sum to 110%, over 100% (pools[0].name); shares: a=70, b=40",
            id="two_partial_shares_over_100",
        ),
    ],
)
def test_shares_not_adding_to_100_are_refused(tmp_path: Path, a: int, b: int, error: str) -> None:
    # serve: 100 (b's), so only train is off
    body = f"""teams:
  - {{name: a, namespaces: [a], shares: {{train: {a}}}}}
  - {{name: b, namespaces: [b], shares: {{train: {b}, serve: 100}}}}
"""
    assert problems(tmp_path, body) == [
        f"environments/sem.yaml:4:11: error: {error}; "
        "they must add up to exactly 100 so quota equals capacity"
    ]


def test_three_shares_adding_to_100_load(tmp_path: Path) -> None:
    body = """teams:
  - {name: a, namespaces: [a], shares: {train: 40}}
  - {name: b, namespaces: [b], shares: {train: 35}}
  - {name: c, namespaces: [c], shares: {train: 25, serve: 100}}
"""
    assert problems(tmp_path, body) == []


# org <- research <- vision, and org <- serving: vision and serving share the root org
TREE = """cohorts:
  - name: org
  - name: research
    parent: org
  - name: vision
    parent: research
  - name: serving
    parent: org
"""


def test_borrowing_reaches_across_a_tree_three_levels_deep(tmp_path: Path) -> None:
    body = (
        TREE
        + """teams:
  - {name: cv, namespaces: [cv], cohort: vision, shares: {train: 100}, borrowFrom: [serve]}
  - {name: web, namespaces: [web], cohort: serving, shares: {serve: 100}}
"""
    )
    assert problems(tmp_path, body) == []


def test_borrowing_from_another_tree_is_refused(tmp_path: Path) -> None:
    # the same teams, but serving is a root of its own: nobody in cv's tree (org) owns serve
    body = (
        TREE.replace("  - name: serving\n    parent: org\n", "  - name: serving\n")
        + """teams:
  - {name: cv, namespaces: [cv], cohort: vision, shares: {train: 100}, borrowFrom: [serve]}
  - {name: web, namespaces: [web], cohort: serving, shares: {serve: 100}}
"""
    )
    assert problems(tmp_path, body) == [
        "environments/sem.yaml:26:85: error: no team in cohort tree 'org' holds a share of pool "
        "'serve', so there is nothing to borrow (teams[0].borrowFrom[0]); give a team of the "
        "same cohort tree a share of it, or join the cohorts under one parent"
    ]


def test_ancestors_that_loop_are_refused_and_the_check_ends(tmp_path: Path) -> None:
    """a -> b -> c -> b: b and c are their own ancestors; a is not (it only leads into the
    loop), and it was once reported as one. The check runs as a process with a deadline: a
    walk that only looks for the cohort it started from never ends on a."""
    body = """cohorts:
  - {name: a, parent: b}
  - {name: b, parent: c}
  - {name: c, parent: b}
teams:
  - {name: t, namespaces: [t], cohort: a, shares: {train: 100, serve: 100}}
"""
    write_environment(tmp_path, "sem", HEAD + body + TIERS)
    done = subprocess.run(
        [sys.executable, str(ROOT / "generate.py"), "-C", str(tmp_path), "render", "sem"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        "environments/sem.yaml:20:23: error: cohort 'b' is its own ancestor (cohorts[1].parent)",
        "environments/sem.yaml:21:23: error: cohort 'c' is its own ancestor (cohorts[2].parent)",
    ]


@pytest.mark.parametrize(("cap", "refused"), [(50, True), (60, False)])
def test_max_usage_below_the_largest_partial_share_is_refused(
    tmp_path: Path, cap: int, refused: bool
) -> None:
    # team a holds 30 % of train and 60 % of serve: the cap must be at least 60, the larger
    body = f"""cohorts:
  - name: all
teams:
  - {{name: a, namespaces: [a], cohort: all, shares: {{train: 30, serve: 60}}, maxUsagePercent: {cap}}}
  - {{name: b, namespaces: [b], cohort: all, shares: {{train: 70, serve: 40}}}}
"""
    expected = (
        [
            "environments/sem.yaml:21:94: error: maxUsagePercent 50 is below the team's own share "
            "of pool 'serve' (60%) (teams[0].maxUsagePercent); it caps own plus borrowed capacity; "
            "set it to at least 60 (borrowing then starts above the share) or remove it"
        ]
        if refused
        else []
    )
    assert problems(tmp_path, body) == expected


TWO_TOPOLOGIES = """name: sem
cluster: {kubernetesVersion: "1.36.2"}
pools:
  - {name: train-h100, role: training, gpu: {model: H100, perNode: 8}, nodes: 8, cpu: 96, memory: 1000Gi,
     nodeLabels: {pool: h100, kubernetes.io/arch: amd64},
     topology: {levels: [RACK_H100, kubernetes.io/hostname]}}
  - {name: train-gb200, role: training, gpu: {model: GB200, perNode: 4}, nodes: 8, cpu: 96, memory: 1000Gi,
     nodeLabels: {pool: gb200, kubernetes.io/arch: arm64},
     topology: {levels: [RACK_GB200, kubernetes.io/hostname]}}
teams:
  - name: pretrain
    namespaces: [pretrain]
    shares: {train-h100: 100, train-gb200: 100}
"""


@pytest.mark.parametrize(
    ("h100", "gb200", "warned"),
    [
        # acme.yaml's shape (docs/adopting.md): GB200 placed by NVLink clique, H100 by rack
        pytest.param("example.com/rack", "nvidia.com/gpu.clique", True, id="different_tops"),
        pytest.param("example.com/rack", "example.com/rack", False, id="one_shared_top"),
    ],
)
def test_a_topology_queue_of_different_topologies_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], h100: str, gb200: str, warned: bool
) -> None:
    """Such a queue gets no default level (one annotation names one level for every flavor),
    so a gang naming none would be placed host by host without a word."""
    body = TWO_TOPOLOGIES.replace("RACK_H100", h100).replace("RACK_GB200", gb200)
    write_environment(tmp_path, "sem", body + TIERS)
    load(tmp_path, "sem")
    err = capsys.readouterr().err
    expected = (
        "environments/sem.yaml:13:13: warning: team 'pretrain''s topology queue holds pools of "
        "different topologies (train-gb200: nvidia.com/gpu.clique, train-h100: example.com/rack): "
        "a gang that names no topology gets no default level and is placed host by host"
    )
    assert (expected in err) is warned, err
    assert err.count("different topologies") == int(warned), err
