"""What the emitter prints for strings that YAML 1.1 (PyYAML, Kubernetes' Python tooling) or
YAML 1.2 (Go's yaml.v3 in kubectl, Argo CD) would read as something else: the expected text
is written out here, not taken from the emitter or a YAML library."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from generators.output.yamlemit import dump
from tests.support import tool

QUOTED = [
    # YAML 1.1 booleans, null and numbers
    "on",
    "off",
    "yes",
    "no",
    "true",
    "False",
    "null",
    "~",
    "1_000",
    "12:30",
    "0x1F",
    ".5",
    # YAML 1.2 numbers that YAML 1.1 reads as strings
    "1e3",
    "0o17",
    "+1",
    "1.",
]
PLAIN = ["hello", "nvidia.com/gpu", "kueue-system", "1.36.2", "v1.13.0", "BestEffortFIFO", "a b"]


@pytest.mark.parametrize("text", QUOTED)
def test_strings_another_reader_takes_for_scalars_are_double_quoted(text: str) -> None:
    assert dump({"k": text}) == f'k: "{text}"\n'


@pytest.mark.parametrize("text", PLAIN)
def test_ordinary_strings_stay_plain(text: str) -> None:
    assert dump({"k": text}) == f"k: {text}\n"


def test_values_that_are_not_strings() -> None:
    assert dump({"a": True, "b": None, "c": 3, "d": 1.5, "e": [], "f": {}}) == (
        "a: true\nb: null\nc: 3\nd: 1.5\ne: []\nf: {}\n"
    )


def _kinds_as_helm_reads(values: list[str], tmp_path: Path) -> dict[str, str]:
    """Go's kind of each value, as the pinned helm reads the emitted values file (helm, kubectl
    and Argo CD read YAML through sigs.k8s.io/yaml: YAML 1.1 rules, Go's own resolver)."""
    return _as_helm_reads(values, "kindOf", tmp_path)


def _as_helm_reads(values: list[Any], function: str, tmp_path: Path) -> dict[str, Any]:
    """`function` (a helm template function) of each value of the emitted values file."""
    helm = tool("helm")
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: oracle\nversion: 0.1.0\n")
    keys = [f"k{i}" for i in range(len(values))]
    (chart / "templates" / "kinds.yaml").write_text(
        "".join(f"{k}: {{{{ {function} .Values.{k} }}}}\n" for k in keys)
    )
    (tmp_path / "values.yaml").write_text(dump(dict(zip(keys, values, strict=True))))
    done = subprocess.run(
        [str(helm), "template", str(chart), "-f", str(tmp_path / "values.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    read = yaml.safe_load(done.stdout.split("\n", 2)[2])  # after '---' and '# Source:'
    return {k: read[k] for k in keys}


def test_go_readers_read_every_emitted_string_back_as_a_string(tmp_path: Path) -> None:
    texts = [*QUOTED, *PLAIN]
    assert list(_kinds_as_helm_reads(texts, tmp_path).values()) == ["string"] * len(texts)


def test_y_and_n_are_read_back_as_strings(tmp_path: Path) -> None:
    """YAML 1.1 and sigs.k8s.io/yaml read plain y/n as booleans, PyYAML's resolver does not:
    the emitter printed them plain until it quoted them explicitly."""
    texts = ["y", "n", "Y", "N"]
    assert list(_kinds_as_helm_reads(texts, tmp_path).values()) == ["string"] * len(texts)


# Multi-line strings as the renders carry them (dashboards, CSV, embedded configs), with the
# lines a block scalar can get wrong: empty lines, a more-indented line, YAML's own markers.
MULTILINE = [
    "a,b\nc,d\n",
    "no final newline\nsecond",
    "p\n\nq\n",
    "one\n  indented two\n    three\n",
    "key: value\n- item\n# not a comment\n---\n...\n",
    '{\n  "json": [1, 2]\n}\n',
    "unicode °C é\nend",
    " leading blank\nsecond",
    "trailing blank \nsecond",
    "two final newlines\n\n",
]


def test_go_readers_read_every_multiline_string_back_exactly(tmp_path: Path) -> None:
    """The emitted literal blocks (and the double-quoted strings a block cannot carry), read
    by the pinned helm (sigs.k8s.io/yaml) and printed back as JSON: each is the string
    written, at the top level, in a list and in a list of mappings."""
    values: list[Any] = [*MULTILINE, list(MULTILINE), [{"d": text} for text in MULTILINE]]
    emitted = dump(values)
    assert emitted.count("|\n") + emitted.count("|-\n") == 3 * 7  # seven of ten are literal blocks
    read = _as_helm_reads(values, "toJson", tmp_path)
    assert list(read.values()) == values  # toJson's output is YAML too: read as Go held it
