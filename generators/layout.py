"""Where things live in a checkout and beside it: stdlib only, so that cheap answers (which
environments exist, is rendered/ up to date) do not pay for jsonschema, Jinja or YAML."""

from __future__ import annotations

import os
from pathlib import Path

ENV_DIR = "environments"
RENDERED = "rendered"
# rendered/<env>/installers/: inputs for other projects' installers (the Kueue, GPU operator and
# kube-prometheus-stack charts' values),
# not Kubernetes objects. Argo CD's Application excludes the folder, kubeconform and the
# policies do not read it; render --check and diff do (docs/kueue.md).
INSTALLERS = "installers"


def is_installer_input(path: str) -> bool:
    """`path` (relative to rendered/<env>/) is an installer input, not an object file."""
    return path.split("/", 1)[0] == INSTALLERS


def environment_names(root: Path) -> list[str]:
    """Shipped environments: environments/*.yaml, except bases (files starting with '_')."""
    return sorted(p.stem for p in (root / ENV_DIR).glob("*.yaml") if not p.name.startswith("_"))


def unknown_dirs(root: Path, keep: set[str]) -> list[str]:
    """`rendered/<dir>/: extra` for every directory no environment in `keep` renders."""
    base = root / RENDERED
    if not base.is_dir():
        return []
    return [
        f"{RENDERED}/{c.name}/: extra" for c in sorted(base.iterdir()) if c.is_dir() and c.name not in keep
    ]


def cache_dir() -> Path:
    """tools/toolchain.py's cache root ($TRAINYARD_CACHE, else ~/.cache/trainyard), found
    without importing tools/: a checkout may ship generators without it."""
    configured = os.environ.get("TRAINYARD_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "trainyard"
