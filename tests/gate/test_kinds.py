"""gate/trainyard_gate/kinds.py: a policy file is read by the parser its `kind` names
(TaintPolicy: the overflow gate; NodeHealthPolicy: the health controller); another kind is
refused at the kind's line and column, and a file whose kind cannot be read is reported by the
first kind's parser, with where."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainyard_gate.health.policy import NodeHealthPolicy
from trainyard_gate.kinds import load_policy
from trainyard_gate.overflow.policy import TaintPolicy
from trainyard_gate.runtime.reader import PolicyError

from tests.gate import health_example, taint_example


def written(folder: Path, text: str) -> Path:
    path = folder / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "kind"),
    [(taint_example.EXAMPLE, TaintPolicy), (health_example.EXAMPLE, NodeHealthPolicy)],
    ids=["TaintPolicy", "NodeHealthPolicy"],
)
def test_each_kind_is_read_by_its_own_parser(tmp_path: Path, text: str, kind: type) -> None:
    assert isinstance(load_policy(written(tmp_path, text)), kind)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param(
            "apiVersion: trainyard.dev/v1alpha1\nkind: Widget\n",
            "2:7: error: expected 'TaintPolicy' or 'NodeHealthPolicy', got 'Widget' (kind)",
            id="another_kind_is_refused_where_it_is_written",
        ),
        pytest.param(
            "kind: [\n",
            "2:1: error: invalid YAML: expected the node content, but found '<stream end>'",
            id="broken_yaml_is_reported_with_its_place",
        ),
    ],
)
def test_a_policy_no_parser_reads_is_refused_at_its_place(tmp_path: Path, text: str, error: str) -> None:
    path = written(tmp_path, text)
    with pytest.raises(PolicyError) as refused:
        load_policy(path)
    assert str(refused.value) == f"{path}:{error}"
