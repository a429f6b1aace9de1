"""Issue 13 item 9: README documents `pre-commit install`, but `make setup` did not install
pre-commit. Every command the README tells a newcomer to run after `make setup` must come
from what `make setup` installs."""

from __future__ import annotations

import re

from tests.conftest import ROOT


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
