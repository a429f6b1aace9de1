"""The base side of `simulate --base REF` (whatif/run.py): environments/ as git
holds it at REF, written into a checkout the box renders; checked against `git show`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from generators.diff.gitref import GitError
from generators.model.load import load
from tests.support import ROOT
from whatif.run import base_checkout


def test_the_base_checkout_holds_environments_as_committed(tmp_path: Path) -> None:
    folder, label = base_checkout(ROOT, "HEAD", tmp_path / "base")
    committed = subprocess.run(
        ["git", "show", "HEAD:environments/staging.yaml"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    assert (folder / "environments" / "staging.yaml").read_bytes() == committed
    assert (folder / "environments" / "_defaults.yaml").is_file()  # the extends: base comes along
    assert label.startswith("base HEAD (") and label.endswith(")")
    assert load(folder, "staging").name == "staging"  # a checkout the generators load as is


def test_an_unknown_ref_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(GitError, match=r"^unknown git ref 'no-such-ref'$"):
        base_checkout(ROOT, "no-such-ref", tmp_path / "base")
