"""The README tells a newcomer to run `pre-commit install` after `make setup`, so `make setup`
must install pre-commit. Every command the README tells a newcomer to run after `make setup` must come
from what `make setup` installs."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support import ROOT


def test_make_setup_installs_the_pre_commit_the_readme_documents() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "pre-commit install" in readme
    assert ".venv/bin/pre-commit install" in readme  # the one make setup puts there
    pins = (ROOT / "requirements-dev.txt").read_text()
    assert re.search(r"^pre-commit==\d+\.\d+\.\d+\b", pins, re.M), "pre-commit must be pinned"
    makefile = (ROOT / "Makefile").read_text()
    setup = re.search(r"^\$\(STAMP\): (.*)\n((?:\t.*\n)+)", makefile, re.M)
    assert setup is not None and "requirements-dev.txt" in setup.group(1)
    assert "-r requirements-dev.txt" in setup.group(2)
    assert re.search(r"^setup: \$\(STAMP\)", makefile, re.M)
    hooks = (ROOT / ".pre-commit-config.yaml").read_text()
    assert ".venv/bin/pre-commit install" in hooks


# Installed by requirements-dev.txt only (their import names); `make render` does not have them.
DEV_ONLY = (
    "pytest",
    "hypothesis",
    "kubernetes",
    "prometheus_client",
    "requests",
    "cryptography",
    "celpy",
    "mypy",
    "ruff",
)

BLOCKER = """
import sys
DEV_ONLY = set(sys.argv[1].split(","))
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in DEV_ONLY:
            raise ImportError(f"{name} is a dev-only dependency (requirements-dev.txt)")
        return None
sys.meta_path.insert(0, Block())
sys.argv = ["generate.py", "render", "--check"]
import runpy
runpy.run_path("generate.py", run_name="__main__")
"""


def test_make_render_needs_only_the_runtime_requirements() -> None:
    """`make render` installs requirements.txt only, so rendering (and
    `render --check`, `validate`'s first step) must import nothing from the dev set."""
    makefile = (ROOT / "Makefile").read_text()
    render = re.search(r"^render: (.*)$", makefile, re.M)
    runtime = re.search(r"^\$\(RUNTIME\): (.*)\n((?:\t.*\n)+)", makefile, re.M)
    assert render is not None and render.group(1).split() == ["setup-runtime"]
    assert runtime is not None and "-r requirements.txt" in runtime.group(2)
    assert "requirements-dev" not in runtime.group(2)
    # Speed-ups off: a fresh render, not a render stamp, must import only runtime modules.
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"TRAINYARD_SPEEDUPS": "0"}
    proc = subprocess.run(
        [sys.executable, "-c", BLOCKER, ",".join(DEV_ONLY)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_make_validate_builds_only_the_tools_validate_runs() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^validate: .*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe is not None
    assert "tools/install.py kubeconform promtool\n" in recipe.group(1)
