"""A kubeconfig whose API server nobody serves: https on a closed loopback port
(`free_port()`). A program started on it gets past its own start-up (flags, policy file,
config) to its first connection and no further, which is what a test of that start-up needs:
the gate's policy errors and `--once` failures (tests/gate), the descheduler's own policy
validation (tests/overflow/test_descheduler_policy.py).

Written as JSON (a YAML reader takes it as it is), so a test may load it and point
`clusters[0].cluster.server` elsewhere (tests/gate/test_faults.py's hanging API)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import free_port


def unreachable_kubeconfig(path: Path) -> Path:
    """Write the kubeconfig to `path`; returns `path`."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "none",
                "cluster": {"server": f"https://127.0.0.1:{free_port()}", "insecure-skip-tls-verify": True},
            }
        ],
        "users": [{"name": "none", "user": {"token": "unused"}}],
        "contexts": [{"name": "none", "context": {"cluster": "none", "user": "none"}}],
        "current-context": "none",
    }
    path.write_text(json.dumps(config), encoding="utf-8")
    return path
