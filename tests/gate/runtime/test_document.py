"""gate/trainyard_gate/runtime/document.py: a policy file's YAML with the line:column of every
node by spec path, so each refusal names its place; duplicate keys and broken YAML refused."""

from __future__ import annotations

import pytest
from trainyard_gate.runtime.document import InvalidDocument, load_with_positions, render_path

POLICY = """\
spec:
  gates:
    - name: mock
      taint: {key: k, value: closed}
"""


def test_every_node_has_its_line_and_column() -> None:
    data, positions = load_with_positions(POLICY)
    assert data == {"spec": {"gates": [{"name": "mock", "taint": {"key": "k", "value": "closed"}}]}}
    assert positions[()] == (1, 1)
    assert positions[("spec", "gates")] == (3, 5)
    assert positions[("spec", "gates", 0, "name")] == (3, 13)
    assert positions[("spec", "gates", 0, "taint", "value")] == (4, 30)


def test_a_duplicate_key_is_refused_at_the_second_one() -> None:
    with pytest.raises(InvalidDocument, match=r"^duplicate key \(spec\.gates\)$") as refused:
        load_with_positions("spec:\n  gates: []\n  gates: []\n")
    assert refused.value.position == (3, 3)


@pytest.mark.parametrize(
    ("text", "message", "position"),
    [
        ("", "policy file is empty", (1, 1)),
        ("spec: [\n", "invalid YAML: expected the node content, but found '<stream end>'", (2, 1)),
        ("a: &x [*x]\n", "invalid YAML: recursive alias", None),  # an alias inside its own anchor
    ],
)
def test_broken_documents_are_refused(text: str, message: str, position: tuple[int, int] | None) -> None:
    with pytest.raises(InvalidDocument) as refused:
        load_with_positions(text)
    assert (str(refused.value), refused.value.position) == (message, position)


def test_paths_read_as_the_spec_writes_them() -> None:
    assert render_path(("spec", "gates", 0, "name")) == "spec.gates[0].name"
    assert render_path((0, "x")) == "[0].x"
    assert render_path(()) == "<document>"
