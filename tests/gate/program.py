"""The controller program as the tests run it, `python -m trainyard_gate` from gate/ (the
image's entry point, gate/Dockerfile), and what its /metrics says.

- `write_inputs(tmp_path, policy_text)`: its two files, the policy (the TaintPolicy example
  unless told) and a kubeconfig whose API server nobody serves;
- `gate_command(policy, kubeconfig, *args)`: the command line, for a one-shot subprocess;
- `gate_program(name, policy, kubeconfig, log, *args)`: the long-running process (a Daemon,
  not started) serving /metrics on a free loopback port, and `sample()` to read it.
"""

from __future__ import annotations

import os
import sys
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from box.daemon import Daemon
from tests.support import GATE_DIR, free_port
from tests.support.kubeconfig import unreachable_kubeconfig

from .taint_example import EXAMPLE


def write_inputs(tmp_path: Path, policy_text: str = EXAMPLE) -> tuple[Path, Path]:
    """`policy.yaml` holding `policy_text` and `kubeconfig` (unreachable) in `tmp_path`."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(policy_text, encoding="utf-8")
    return policy, unreachable_kubeconfig(tmp_path / "kubeconfig")


def gate_command(policy: Path, kubeconfig: Path, *args: str) -> list[str]:
    """The program as its Deployment runs it: a policy file and a kubeconfig, then `args`."""
    return [sys.executable, "-m", "trainyard_gate", f"--policy={policy}", f"--kubeconfig={kubeconfig}", *args]


@dataclass
class GateProgram:
    daemon: Daemon
    metrics_url: str

    def sample(self, name: str, **labels: str) -> float | None:
        """The value of sample `name` with exactly `labels` on /metrics now; None if absent."""
        with urllib.request.urlopen(self.metrics_url, timeout=2) as response:
            text = response.read().decode()
        for family in text_string_to_metric_families(text):
            for found in family.samples:
                if found.name == name and found.labels == labels:
                    return float(found.value)
        return None


def gate_program(
    name: str, policy: Path, kubeconfig: Path, log: Path, *args: str, env: Mapping[str, str] | None = None
) -> GateProgram:
    """`python -m trainyard_gate` on `policy` and `kubeconfig` with /metrics on a free loopback
    port, then `args`; `env` is added to this process' environment. Not started."""
    port = free_port()
    command = gate_command(policy, kubeconfig, f"--metrics-port={port}", "--metrics-address=127.0.0.1", *args)
    daemon = Daemon(
        name,
        command,
        log,
        ports=(port,),
        env={**os.environ, "PYTHONPATH": str(GATE_DIR), **(env or {})},
        cwd=GATE_DIR,
    )
    return GateProgram(daemon, f"http://127.0.0.1:{port}/metrics")
