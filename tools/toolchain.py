"""Pinned external tools and where their binaries live.

The binaries are compiled from Go modules (see tools/install.py) and cached OUTSIDE the
checkout, keyed by name and version, so a fresh clone of the repo (CI) reuses them:

    cache_dir()/bin/<name>-<version>

Stdlib only: this module is imported by tests and by tools/install.py before any venv
exists.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator
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
        # Manifest security/reliability checks over rendered/ (tests/validation/test_kube_score.py).
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
        # The cluster in a box: same wrapper as kube-apiserver, cheap once it is built.
        "kube-scheduler": "v1.36.5",
        "kube-controller-manager": "v1.36.5",
        # Fake nodes and pod lifecycles for the box (sigs.k8s.io/kwok; kwokctl drives it).
        "kwok": "v0.8.0",
        "kwokctl": "v0.8.0",
        # Renders the pinned upstream charts in ../shared/charts (`helm template`).
        "helm": "v3.22.0",
        # The exporters the monitoring contract is proven against (a real scrape). node_exporter
        # matches the one kube-prometheus-stack 88.5.3 deploys.
        "node_exporter": "v1.12.1",
        # The next three are built from source archives (ARCHIVES): the Go module proxy here
        # refuses the main modules, their dependencies are served.
        "kube-state-metrics": "v2.17.0",
        # interLink's virtual-kubelet at the version of the image we render (0.6.1).
        "interlink-vk": "0.6.1",
        "prometheus-adapter": "v0.12.0",
        # The reference virtual-kubelet with its mock provider (staging's overflow provider).
        "virtual-kubelet": "v1.14.1",
        # JobSet's controller, the version Kueue v0.19.2 builds against (its go.mod): the box
        # runs JobSets (and TrainJobs' JobSets) through it.
        "jobset": "v0.12.0",
        # Argo CD's application controller and repo server for the box (one multi-call binary,
        # built from a source archive: the proxy cannot serve its nested gitops-engine module).
        # The release our pinned Argo CD CRDs (../shared/crds/argo-cd-v3.5.1) come from.
        "argocd": "v3.5.1",
        # Argo CD's Redis in the box: the Go Redis server Argo CD v3.5.1 itself runs in-process
        # as its Redis for `argocd --core` (cmd/argocd/commands/headless/headless.go:264), at
        # the version its go.mod requires. A wrapper main serves it on a port (tools/README.md).
        "miniredis": "v2.38.0",
    }
)

# Upstream archives the project reads offline, with their sha256: source archives that
# tools/install.py builds from, and Helm charts that tests render with `helm template`.
# They come from ../shared/<kind>/ beside the checkout ($TRAINYARD_SHARED relocates it);
# `python tools/install.py` copies each verified file into cache_dir()/archives, where a
# fresh clone finds it. Outside this setup, ../shared/<kind>/SOURCES.txt gives the upstream
# command that recreates every file (same tag, same sha256 for the source archives).
ARCHIVES: Final[MappingProxyType[str, tuple[str, str]]] = MappingProxyType(
    {
        "interlink-0.6.1.tar.gz": ("src", "29f389b646d715b262f25fd4358bb94c730bbe1f1ae59417fb1e945cbed16746"),
        "kube-state-metrics-v2.17.0.tar.gz": (
            "src",
            "10e554128a88d268cada206420bfd7e43cbfbd5ea0a557d3b1f312cbe76da5e3",
        ),
        "prometheus-adapter-v0.12.0.tar.gz": (
            "src",
            "3f6f6f54422d02aea906a3a254dcd77bd1e02548b5dfe761d82d6f3bb7fefc28",
        ),
        "argo-cd-3.5.1.tar.gz": ("src", "338aabbdadbf56594d2e6fbe609b741db001c46847283054a73ec669baf3b0ee"),
        "kueue-0.19.2.tgz": ("charts", "9241254b8f4f10600daea9d5c119fdc1ef74db2fd57cd4aaaa2436fa85b30f0e"),
        "kube-prometheus-stack-88.5.3.tgz": (
            "charts",
            "bc0613e2f68982b4e6649fe1830311a170e4aa0451b099b7815c1b9bb283be0d",
        ),
        "gpu-operator-v26.7.0.tgz": (
            "charts",
            "f4cd7515196caab15770f3260e0f8709f6d7a3dea0cd7ed934d3a9507f675579",
        ),
    }
)

SHARED_ENV: Final = "TRAINYARD_SHARED"

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


def shared_dir() -> Path:
    """The shared material beside the checkout: $TRAINYARD_SHARED, else ../shared."""
    env = os.environ.get(SHARED_ENV)
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parent.parent.parent / "shared"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached_archive(name: str) -> Path:
    """Where install.py keeps the verified copy of an archive (may not exist yet)."""
    if name not in ARCHIVES:
        raise KeyError(f"unknown archive {name!r}; known: {', '.join(sorted(ARCHIVES))}")
    return cache_dir() / "archives" / name


def archive_path(name: str) -> Path:
    """Path of a verified upstream archive (a chart or a source tarball).

    The cached copy is trusted (install.py verified it before the atomic rename); else the
    file in ../shared is used if its sha256 matches. Raises ToolNotInstalled with the
    command that fixes it.
    """
    cached = cached_archive(name)
    if cached.is_file():
        return cached
    kind, sha = ARCHIVES[name]
    shared = shared_dir() / kind / name
    if shared.is_file() and sha256_of(shared) == sha:
        return shared
    raise ToolNotInstalled(
        f"archive {name} (sha256 {sha[:12]}...) is not in {cached.parent} nor in ../shared/{kind}; "
        f"run: python tools/install.py --archives (it copies ../shared/{kind}/{name}; "
        f"../shared/{kind}/SOURCES.txt names the upstream command that recreates it)"
    )


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


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created if missing) for the block: concurrent
    installs do not build one tool twice, two boxes do not start kwokctl at once. The
    kernel drops it if the process dies, so a crash leaves no stale lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
