"""docs/components.md's recipe for adding a component, run on a scratch component.

The recipe's table names the places a new component touches (at most five). This test
writes a component `gadgets` into exactly those places of a copy of the checkout, and
nothing else: its module, its template folder, its tests folder, its page and its README
link. Then, in the copy, a fresh process renders every shipped environment and the checks
that hold a component to its places run (tests/test_component_homes.py, tests/test_placement.py,
tests/test_test_homes.py, and the scratch component's own test). If adding a component ever
needs a sixth place (a registry line, a docs row a test insists on, a sync wave for a kind
that has one), one of them fails here; if the table grows past five rows, the first
assertion does.

The component renders one ConfigMap, `gadgets`, in the Kueue namespace, listing the teams:
a kind every environment already renders, from what the model already holds, so the recipe
is run without the conditional places (a setting, a new kind, a CRD, a policy).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from generators.layout import environment_names
from generators.spec.load import load_valid
from tests.support import ROOT
from tests.support.scratch import copy_repo

pytestmark = pytest.mark.slow  # a copy of the checkout and three fresh processes: 20 to 25 s of wall time

NAME = "gadgets"
MAX_PLACES = 5
# What a checkout holds that the render and the checks read (not .git, .venv, caches).
TREE = (
    "generate.py",
    "pyproject.toml",
    "README.md",
    "generators",
    "templates",
    "schemas",
    "environments",
    "rendered",
    "docs",
    "tests",
    "box",
    "whatif",
    "gate",
    "policies",
    "tools",
)
README_ROW = "| `docs/` | "

MODULE = '''\
"""Scratch component: one ConfigMap listing the environment's teams."""

from __future__ import annotations

from collections.abc import Sequence

from generators.k8s.objects import Obj
from generators.model.environment import Environment
from generators.output.templating import render


def generate(env: Environment, earlier: Sequence[Obj] = ()) -> list[Obj]:
    teams = ",".join(team.name for team in env.teams)
    return [render("gadgets/configmap.yaml.j2", namespace=env.kueue.namespace, teams=teams)]
'''
TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: gadgets
  namespace: {{ namespace | y }}
data:
  teams: {{ teams | y }}
"""
TEST = '''\
"""The scratch component renders its ConfigMap."""

from generators.components import gadgets
from generators.model.load import load
from tests.support import ROOT


def test_one_configmap_naming_the_teams() -> None:
    [obj] = gadgets.generate(load(ROOT, "dev"))
    assert obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == "gadgets"
'''
PAGE = "# Gadgets\n\nOne ConfigMap, `gadgets`, listing the teams.\n"


def recipe_places() -> list[str]:
    """The place column of docs/components.md's recipe table, `<c>` as written."""
    text = (ROOT / "docs" / "components.md").read_text(encoding="utf-8")
    section = text.split("## Adding a component", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|") for line in section.splitlines() if re.match(r"\| \d+ \|", line)]
    return [re.findall(r"`([^`]+)`", row[2])[0] for row in rows]


def write_places(root: Path) -> list[str]:
    """The scratch component in each place of the recipe; returns the places written."""
    files = {
        f"generators/components/{NAME}.py": MODULE,
        f"templates/{NAME}/configmap.yaml.j2": TEMPLATE,
        f"tests/{NAME}/__init__.py": "",
        f"tests/{NAME}/test_{NAME}.py": TEST,
        f"docs/{NAME}.md": PAGE,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    assert text.count(README_ROW) == 1, "README's layout table lost its docs/ row"
    readme.write_text(
        text.replace(README_ROW, f"{README_ROW}[gadgets](docs/{NAME}.md); ", 1), encoding="utf-8"
    )
    return [
        "generators/components/<c>.py",
        "templates/<c>/",
        "tests/<c>/",
        "docs/<c>.md",
        "README.md",
    ]


def run(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": "1", "TRAINYARD_SPEEDUPS": "0"}  # nothing cached outside the copy is trusted
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, *argv], cwd=root, env=env, capture_output=True, text=True, check=False
    )


def test_the_recipe_has_at_most_five_places() -> None:
    places = recipe_places()
    assert 0 < len(places) <= MAX_PLACES, places


def test_a_scratch_component_in_the_recipes_places_renders_and_passes_the_checks(tmp_path: Path) -> None:
    root = copy_repo(tmp_path / "repo", TREE)
    written = write_places(root)
    assert written == recipe_places(), "the recipe's table and what this test writes differ"

    done = run(root, "generate.py", "render")
    assert done.returncode == 0, done.stdout + done.stderr
    for env_name in environment_names(ROOT):
        _, spec = load_valid(ROOT, env_name)  # the spec, defaults filled in by the schema
        path = root / "rendered" / env_name / NAME / spec["kueue"]["namespace"] / "configmap-gadgets.yaml"
        assert path.is_file(), sorted(p.name for p in (root / "rendered" / env_name).iterdir())
        obj = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert obj["data"] == {"teams": ",".join(team["name"] for team in spec["teams"])}
        assert obj["metadata"]["labels"]["trainyard.dev/component"] == NAME  # the pipeline's labels

    checks = run(
        root,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/test_component_homes.py",
        "tests/test_placement.py",
        "tests/test_test_homes.py",
        f"tests/{NAME}",
    )
    assert checks.returncode == 0, checks.stdout[-4000:] + checks.stderr[-2000:]
    assert re.search(r"\d+ passed", checks.stdout), checks.stdout[-2000:]
