"""Per-node quantities. Inputs once rendered wrong (`1800GB`, `1800`, `1800Pi`, `1.8Ti`)
are in the bad-input corpus (tests/corpus/bad/memory-*.yaml); here: the
bounds stated in the schema are the ones enforced, and exoticHardware lifts them but never
Kubernetes' own limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generators.model import quantity
from generators.spec.schema import SCHEMA_DIR
from tests.support import CORPUS, ROOT
from tests.support.scratch import repo_with, run_cli, tree_digest


def _pool_schema() -> dict[str, dict[str, object]]:
    schema = json.loads((SCHEMA_DIR / "environment.schema.json").read_text())
    pool = schema["$defs"]["pool"]["properties"]
    return {
        "gpu": pool["gpu"]["properties"]["perNode"],
        "cpu": pool["cpu"],
        "memory": pool["memory"],
        "extra": pool["extraResources"]["additionalProperties"],
        "pool": pool["exoticHardware"],
    }


def test_schema_states_bounds_with_units() -> None:
    """Editors show descriptions: each per-node field names its unit and the bounds enforced."""
    fields = _pool_schema()
    for name in ("gpu", "cpu", "memory", "extra"):
        bounds = fields[name]["x-perNode"]
        assert isinstance(bounds, dict)
        quantity.parse(bounds["min"])
        quantity.parse(bounds["max"])
    for name, field in (("gpu", fields["gpu"]), ("cpu", fields["cpu"]), ("memory", fields["memory"])):
        bounds = field["x-perNode"]
        assert isinstance(bounds, dict)
        text = str(field["description"])
        assert f"{bounds['min']} to {bounds['max']}" in text, (name, text)
        assert "exoticHardware" in text
    assert "whole bytes" in str(fields["memory"]["description"])
    assert "cores" in str(fields["cpu"]["description"])


def _minimal(**replace: str) -> str:
    text = (CORPUS / "valid-minimal.yaml").read_text()
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    return text


def test_exotic_hardware_lifts_bounds(tmp_path: Path) -> None:
    text = _minimal(
        **{
            "    nodes: 4\n": "    nodes: 4\n    exoticHardware: true\n",
            "perNode: 8": "perNode: 32",
            "memory: 1000Gi": "memory: 64Ti",
        }
    )
    root = repo_with(tmp_path, text)
    code, _, err = run_cli(root, "render", "bad")
    assert code == 0, err
    queue = (root / "rendered" / "bad" / "kueue" / "clusterqueue-alpha.yaml").read_text()
    assert "nominalQuota: 256Ti" in queue and 'nominalQuota: "128"' in queue


def test_quantity_refusal_writes_nothing(tmp_path: Path) -> None:
    """`memory: 1800` used to render 1,800 bytes per node with exit 0 and a clean validate."""
    root = repo_with(tmp_path, _minimal(**{"memory: 1000Gi": "memory: 1800"}))
    before = tree_digest(root / "rendered")
    code, out, err = run_cli(root, "render", "bad")
    assert (code, out) == (1, "")
    assert err == (
        "environments/bad.yaml:10:13: error: memory per node is implausible: 1800 bytes, "
        "below 1Gi (pools[0].memory); a bare number counts bytes: did you mean 1800Gi or "
        "1800G? plausible per node: 1Gi to 32Ti; set exoticHardware: true on the pool for "
        "hardware outside these bounds\n"
    )
    assert tree_digest(root / "rendered") == before


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            '"100 m"',
            "error: '100 m' is not a Kubernetes quantity (overflow.gate.resources.cpuRequest); "
            "did you mean 100m?",
        ),
        (
            '"1Gb"',
            "error: '1Gb' is not a Kubernetes quantity (overflow.gate.resources.cpuRequest); "
            "did you mean 1Gi (1 x 2^30) or 1G (1 x 10^9)?",
        ),
        (
            "2",
            'error: number 2 must be a quoted quantity here (overflow.gate.resources.cpuRequest); write "2"',
        ),
    ],
)
def test_overflow_resource_quantities_explain_themselves(tmp_path: Path, value: str, expected: str) -> None:
    """The overflow section's container resources get the same explanation as per-node
    quantities (they used to print the bare regular expression)."""
    staging = (ROOT / "environments" / "staging.yaml").read_text()
    assert "\n    dryRun: false\n" in staging
    text = staging.replace("name: staging", "name: bad", 1).replace(
        "\n    dryRun: false\n", f"\n    dryRun: false\n    resources: {{cpuRequest: {value}}}\n", 1
    )
    root = repo_with(tmp_path, text)
    code, out, err = run_cli(root, "render", "bad")
    assert (code, out) == (1, "")
    line = err.splitlines()[0]
    assert line.startswith("environments/bad.yaml:") and expected in line, line
