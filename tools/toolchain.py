"""Pinned external tools and where their binaries live.

The binaries are compiled from Go modules (see tools/install.py) and cached OUTSIDE the
checkout, keyed by name and version, so a fresh clone of the repo (CI) reuses them:

    cache_dir()/bin/<name>-<version>

Stdlib only: this module is imported by tests and by tools/install.py before any venv
exists.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import MappingProxyType
from typing import Final

# Tool name -> pinned version. The version is part of the cached file name, so bumping a
# pin here makes the next `python tools/install.py` build the new binary while the old one
# stays cached (nothing is overwritten in place). Versions are the tools' own release
# versions; tools/install.py maps each to the Go module version that builds it.
PINS: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        "kubeconform": "v0.7.0",
        "actionlint": "v1.7.12",
        # Kubernetes manifest security/reliability checks over rendered/ (tests/test_kube_score.py).
        "kube-score": "v1.20.0",
        # Prometheus 3.16.0 == Go module github.com/prometheus/prometheus v0.316.0.
        "promtool": "v3.16.0",
        "prometheus": "v3.16.0",
        "etcd": "v3.6.16",
        "kueue": "v0.19.2",
        "descheduler": "v0.36.0",
        # k8s.io/kubernetes v1.36.5 with staging modules at v0.36.5 (v1.36.6 is not served).
        "kube-apiserver": "v1.36.5",
        "kubectl": "v1.36.5",
    }
)

# Environment variable that relocates the cache (e.g. to a CI cache volume).
CACHE_ENV: Final = "TRAINYARD_CACHE"


class ToolNotInstalled(RuntimeError):
    """A pinned tool binary is not in the cache; the message says how to install it."""


def cache_dir() -> Path:
    """Root of the tool cache: $TRAINYARD_CACHE, else ~/.cache/trainyard."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "trainyard"


def bin_dir() -> Path:
    """Directory holding the versioned binaries."""
    return cache_dir() / "bin"


def binary_name(name: str) -> str:
    """File name of a tool's cached binary: <name>-<version>."""
    try:
        version = PINS[name]
    except KeyError:
        known = ", ".join(sorted(PINS))
        raise KeyError(f"unknown tool {name!r}; known tools: {known}") from None
    return f"{name}-{version}"


def expected_path(name: str) -> Path:
    """Where the pinned binary for `name` lives once installed (may not exist yet)."""
    return bin_dir() / binary_name(name)


def is_installed(name: str) -> bool:
    """True if the pinned binary exists and is executable."""
    path = expected_path(name)
    return path.is_file() and os.access(path, os.X_OK)


def tool_path(name: str) -> Path:
    """Path of the pinned, installed binary for `name`.

    Raises ToolNotInstalled (one line, with the install command) if it is missing, and
    KeyError for a name that is not in PINS.
    """
    path = expected_path(name)
    if not is_installed(name):
        raise ToolNotInstalled(
            f"{name} {PINS[name]} is not installed at {path}; run: python tools/install.py {name}"
        )
    return path
