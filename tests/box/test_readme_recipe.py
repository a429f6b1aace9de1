"""The README's "Try your environment locally" recipe, copied from the README and run as written.

The block after `<!-- recipe:box -->` is run by bash (-e: any failing line fails the test)
in the checkout, with `python` the interpreter running the tests and `kubectl` the pinned
build (tools/install.py), the two things a user's PATH is assumed to hold. Its output must
show what the real controllers reported: every rendered ClusterQueue listed by kubectl, the
KWOK nodes of the H100 pool Ready, and the scene's gang placed on H100 nodes. The box lives
in a temp dir ($TRAINYARD_BOX_DIR), and nothing of it may run afterwards.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from box.state import BOX_DIR_ENV
from tests.support import ROOT, tools
from tests.support.box import BOX_TOOLS, UP_SECONDS, log_tails

pytestmark = [pytest.mark.controlplane, pytest.mark.slow]

MARKER = "<!-- recipe:box -->"


def recipe() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert MARKER in text, "README.md lost its box recipe marker"
    block = re.search(r"```sh\n(.*?)```", text[text.index(MARKER) :], re.DOTALL)
    assert block is not None, "no ```sh block after the box recipe marker"
    return block.group(1)


def test_readme_box_recipe_runs_as_written(tmp_path: Path) -> None:
    pinned = tools(*BOX_TOOLS)
    path_dir = tmp_path / "bin"
    path_dir.mkdir()
    (path_dir / "kubectl").symlink_to(pinned["kubectl"])
    # The interpreter's own folder (the venv's bin/), not a link to it: a venv is found from
    # where its python lives.
    path = os.pathsep.join([str(path_dir), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, BOX_DIR_ENV: str(tmp_path / "box"), "PATH": path}
    env.pop("KUBECONFIG", None)
    try:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", recipe()],
            cwd=ROOT,
            env=env,
            text=True,
            capture_output=True,
            timeout=UP_SECONDS + 300,
            check=False,
        )
        if done.returncode != 0:  # before `box down` removes them (tests/support/box.py)
            print(log_tails(tmp_path / "box" / "staging"), file=sys.stderr)
    finally:
        subprocess.run(
            [sys.executable, str(ROOT / "generate.py"), "box", "down", "staging"],
            env=env,
            capture_output=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    folder = ROOT / "rendered" / "staging" / "kueue"
    queues = sorted(p.stem.removeprefix("clusterqueue-") for p in folder.glob("clusterqueue-*.yaml"))
    for queue in queues:
        assert re.search(rf"^{re.escape(queue)}\s", done.stdout, re.MULTILINE), (queue, done.stdout)
    assert re.search(r"^gang of 4 x 8 GPUs .* landed on train-h100-", done.stdout, re.MULTILINE), done.stdout
    ready = re.findall(r"^train-h100-\d+\s+Ready\s", done.stdout, re.MULTILINE)
    assert len(ready) == 32, done.stdout  # staging: 32 H100 nodes
    assert "stopped" in done.stderr and not (tmp_path / "box" / "staging").exists()
