"""The tests' support layer: one home for what every test folder needs (docs/testing.md).

- where things are: `ROOT` (the repository), `CORPUS` (tests/corpus), `GATE_DIR` (gate/,
  the controller's own program; pytest puts it on sys.path through `pythonpath` in
  pyproject.toml, so `import trainyard_gate` works in any test without a sys.path edit);
- `free_port()`: the cluster in a box's (box/daemon.py), one definition;
- a pinned tool or archive: `tool("helm")`, `tools("etcd", "kube-apiserver")`,
  `archive("kueue-0.19.2.tgz")`. A missing one FAILS the test with the install command
  (ToolNotInstalled's message), never skips: CI and `make test` provision every pin;
- scratch repositories and the in-process CLI: tests/support/scratch.py;
- the pinned Prometheus, started, read and stopped: tests/support/prometheus.py;
- commands a doc or a rendered installer header states: tests/support/recipes.py;
- overflow spec entries a test needs only to be valid (a mock provider, the inference pool,
  a served Deployment): tests/support/overflow_spec.py;
- `mappings(value)`: every mapping nested in a parsed YAML/JSON document.
- a kubeconfig whose API server nobody serves: tests/support/kubeconfig.py;
- a valid text broken by one edit, the edit checked to apply: tests/support/edits.py.
- what the Argo CD scene tests read from a scene's output (the waves an environment
  Application applies, the first-sync scene's promises): tests/support/argocd.py.

Import from here, not from a conftest.py: a conftest holds fixtures and hooks, which pytest
finds by itself (its docs advise against importing conftest modules).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from box.daemon import free_port
from tools.toolchain import ToolNotInstalled, archive_path, tool_path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus"
GATE_DIR = ROOT / "gate"

__all__ = ["CORPUS", "GATE_DIR", "ROOT", "archive", "free_port", "mappings", "tool", "tools"]

# Appended to ToolNotInstalled's own message (which names `python tools/install.py NAME`).
PROVISIONED = "CI and `make test` provision every pinned tool and archive first: make tools"


def _missing(errors: list[str]) -> NoReturn:
    pytest.fail(" | ".join(errors) + f" ({PROVISIONED})", pytrace=False)


def tool(name: str) -> Path:
    """The pinned binary `name` (tools/toolchain.py PINS), or fail with how to build it."""
    return tools(name)[name]


def tools(*names: str) -> dict[str, Path]:
    """The pinned binaries `names`; fails once naming every one that is missing."""
    found: dict[str, Path] = {}
    errors: list[str] = []
    for name in names:
        try:
            found[name] = tool_path(name)
        except ToolNotInstalled as error:
            errors.append(str(error))
    if errors:
        _missing(errors)
    return found


def archive(name: str) -> Path:
    """The verified chart/source archive `name`, or fail with how to provide it."""
    try:
        return archive_path(name)
    except ToolNotInstalled as error:
        _missing([str(error)])


def mappings(value: Any) -> Iterator[dict[str, Any]]:
    """Every mapping nested anywhere in `value` (a parsed YAML or JSON document), outermost first."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from mappings(item)
    elif isinstance(value, list):
        for item in value:
            yield from mappings(item)
