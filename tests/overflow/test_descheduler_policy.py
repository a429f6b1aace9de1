"""The rendered DeschedulerPolicy, loaded by the pinned descheduler binary itself.

The descheduler decodes and validates its policy file before it first talks to the API
server. Pointed at an address nobody serves, a valid policy therefore gets as far as the
connection attempt ("connection refused"), while an invalid one stops earlier with the
validation error. The two negative controls prove the binary does check the file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import tool
from tests.support.edits import edited
from tests.support.kubeconfig import unreachable_kubeconfig

from .conftest import one, overflow_envs

REACHED_THE_API = "connection refused"


def _load(policy_text: str, tmp_path: Path) -> str:
    """Run the descheduler on `policy_text` against no API server; its combined output."""
    descheduler = tool("descheduler")
    policy = tmp_path / "policy.yaml"
    policy.write_text(policy_text, encoding="utf-8")
    kubeconfig = unreachable_kubeconfig(tmp_path / "kubeconfig")
    done = subprocess.run(
        [
            str(descheduler),
            f"--policy-config-file={policy}",
            f"--kubeconfig={kubeconfig}",
            "--descheduling-interval=0",
            # No HTTPS (metrics, health): its default 0.0.0.0:10258 is one port for every
            # descheduler on the machine, and two of these runs at once (-n 2) collided on it.
            "--secure-port=0",
            "--v=2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode != 0, "no API server: the descheduler cannot have succeeded"
    return done.stdout + done.stderr


@pytest.mark.parametrize("env", overflow_envs())
def test_rendered_policy_passes_the_descheduler_own_validation(env: str, tmp_path: Path) -> None:
    output = _load(one(env, "ConfigMap", "descheduler")["data"]["policy.yaml"], tmp_path)
    assert REACHED_THE_API in output, output[-3000:]


@pytest.mark.parametrize(
    ("old", "new", "refusal"),
    [
        pytest.param(
            "- PodsWithLocalStorage\n",
            "- PodsWithLocalStorages\n",
            "PodsWithLocalStorages",
            id="unknown-protection",
        ),
        pytest.param(
            "      namespaces:\n        include:\n",
            "      namespaces:\n        exclude: [b]\n        include:\n",
            "Include/Exclude",
            id="include-and-exclude-namespaces",
        ),
        pytest.param(
            "      priorityThreshold:\n",
            "      priorityThreshold:\n        name: training\n",
            "only one of priorityThreshold fields can be set",
            id="threshold-value-and-name",
        ),
    ],
)
def test_a_broken_policy_is_refused_before_the_api(old: str, new: str, refusal: str, tmp_path: Path) -> None:
    output = _load(edited(one("prod", "ConfigMap", "descheduler")["data"]["policy.yaml"], old, new), tmp_path)
    assert REACHED_THE_API not in output, output[-3000:]
    assert refusal in output, output[-3000:]
