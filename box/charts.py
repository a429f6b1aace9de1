"""`helm template` of a pinned upstream chart (tools.toolchain.ARCHIVES), offline."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from box import memo
from box.kube import Obj
from tools.toolchain import PINS, archive_path, tool_path

# The pinned kube-apiserver: what `.Capabilities.KubeVersion` answers in the templates.
KUBE_VERSION = PINS["kube-apiserver"].removeprefix("v")


def template_argv(helm: Path, archive: Path, release: str, namespace: str, values: Path | None) -> list[str]:
    """`helm template` of chart `archive` as `release` in `namespace` (with `values`), against
    the pinned apiserver's version; the box's and the tests' one command line."""
    argv = [
        str(helm),
        "template",
        release,
        str(archive),
        "--namespace",
        namespace,
        "--kube-version",
        KUBE_VERSION,
    ]
    return argv + (["--values", str(values)] if values is not None else [])


def template(chart: str, release: str, values: Path | None, namespace: str) -> list[Obj]:
    """Every object chart archive `chart` renders as `release` in `namespace` with `values`."""
    argv = template_argv(tool_path("helm"), archive_path(chart), release, namespace, values)

    def run() -> list[Obj]:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"helm template {chart} failed: {done.stderr.strip()}")
        return [doc for doc in yaml.load_all(done.stdout, Loader=yaml.CSafeLoader) if doc]

    # The same pinned helm, chart bytes and values give the same objects: run once
    # (box/memo.py); the values by their bytes (their path is a fresh run directory).
    inputs: list[bytes | str] = [argv[0], release, namespace, KUBE_VERSION, archive_path(chart).read_bytes()]
    inputs.append(values.read_bytes() if values is not None else "(no values)")
    result: list[Obj] = memo.memo("helm-template", inputs, run)
    return result
