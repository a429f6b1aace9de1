"""`python -m trainyard_gate` as a process: policy errors, --once, /metrics, SIGTERM.

The Kubernetes API here is deliberately unreachable (a closed loopback port): these tests
cover start-up and shutdown, not node patching (see test_nodes_controlplane.py).
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests

from tests.support import GATE_DIR, free_port

from .program import gate_command, write_inputs
from .taint_example import EXAMPLE


def test_invalid_policy_exits_1_with_one_line(tmp_path: Path) -> None:
    policy, kubeconfig = write_inputs(
        tmp_path, EXAMPLE.replace("effect: NoSchedule}", "effect: NoExecute}", 1)
    )
    done = subprocess.run(
        gate_command(policy, kubeconfig),
        cwd=GATE_DIR,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"{policy}:17:") and "NoExecute is refused" in line


def test_once_fails_fast_when_nodes_cannot_be_read(tmp_path: Path) -> None:
    policy, kubeconfig = write_inputs(tmp_path)
    done = subprocess.run(
        gate_command(policy, kubeconfig, "--once", "--metrics-port", "0"),
        cwd=GATE_DIR,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    logs = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert any(entry["msg"] == "cannot read nodes for the initial state" for entry in logs)


@pytest.mark.slow  # starts the gate's own server process and waits out its start-up backoff
def test_serves_metrics_and_exits_cleanly_on_sigterm(tmp_path: Path) -> None:
    policy, kubeconfig = write_inputs(tmp_path)
    port = free_port()
    process = subprocess.Popen(
        gate_command(policy, kubeconfig, "--metrics-port", str(port), "--metrics-address", "127.0.0.1"),
        cwd=GATE_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        body = ""
        # A safety net only: the loop waits on the real condition (the fourth failed node read
        # counted, so the gate now sleeps 8 s in its start-up backoff: 1, 2, 4, 8 s). Under load
        # the interpreter alone can take 15 s to import the Kubernetes client.
        deadline = time.monotonic() + 120
        while 'trainyard_gate_errors_total{stage="nodes"} 4.0' not in body:
            assert process.poll() is None, process.communicate()[1]
            if time.monotonic() > deadline:
                pytest.fail(f"no node error counted in /metrics:\n{body}")
            with contextlib.suppress(requests.RequestException):
                body = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=1).text
            time.sleep(0.1)
        for name in (
            "trainyard_gate_query_success",
            "trainyard_gate_free_gpus",
            "trainyard_gate_transitions_total",
            "trainyard_gate_closed",
        ):
            assert f"# TYPE {name.removesuffix('_total')}" in body
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=10)
        assert process.returncode == 0
        assert time.monotonic() - started < 8  # it woke from the 8 s back-off sleep, not after it
        messages = [json.loads(line)["msg"] for line in stderr.splitlines()]
        assert messages[0] == "starting" and messages[-1] == "stopped"
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
