"""`helm template` of a pinned upstream chart (tools.toolchain.ARCHIVES), offline."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from generators.box import memo
from generators.box.kube import Obj
from tools.toolchain import archive_path, tool_path

KUBE_VERSION = "1.36.5"  # the pinned kube-apiserver: what `.Capabilities` answers in templates


def template(chart: str, release: str, values: Path | None, namespace: str) -> list[Obj]:
    """Every object chart archive `chart` renders as `release` in `namespace` with `values`."""
    argv = [
        str(tool_path("helm")),
        "template",
        release,
        str(archive_path(chart)),
        "--namespace",
        namespace,
        "--kube-version",
        KUBE_VERSION,
    ]
    if values is not None:
        argv += ["--values", str(values)]

    def run() -> list[Obj]:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"helm template {chart} failed: {done.stderr.strip()}")
        return [doc for doc in yaml.load_all(done.stdout, Loader=yaml.CSafeLoader) if doc]

    # The same pinned helm, chart bytes and values give the same objects: run once
    # (generators/box/memo.py); the values by their bytes (their path is a fresh run directory).
    inputs: list[bytes | str] = [argv[0], release, namespace, KUBE_VERSION, archive_path(chart).read_bytes()]
    inputs.append(values.read_bytes() if values is not None else "(no values)")
    result: list[Obj] = memo.memo("helm-template", inputs, run)
    return result
