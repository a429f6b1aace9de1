"""Small environments written in the oracle tests, rendered in-process.

An oracle test writes its own small spec, renders it with the real pipeline and compares
what comes out with numbers worked out by hand from that spec (written in the test as
literals, with the arithmetic in a comment) or by a few lines of arithmetic in the test.
Never with a value the code under test computes: a bug there would move the expected value
with it, and the test could not fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from generators.model.environment import Environment
from generators.model.load import load
from generators.pipeline import render
from tests.support.scratch import write_environment

Objects = dict[tuple[str, str], dict[str, Any]]  # (kind, [namespace/]name) -> object


NAME = "oracle"
KUBERNETES = "1.36.2"


def oracle_spec(body: str) -> str:
    """An oracle's environment file: the preamble every oracle spec shares (the shipped
    _defaults.yaml extended: its tiers, Kueue and Argo CD settings; the environment `oracle`
    at the pinned Kubernetes minor), then the test's own `body` (pools, teams, ...).

    `example: true`: the oracle specs name example images (ghcr.io/example/...) on purpose,
    so their placeholder warnings (generators/model/checks/example.py) would only bury the
    failure of an oracle under lines about image names. The flag changes no rendered byte."""
    return (
        f"extends: _defaults.yaml\nname: {NAME}\nexample: true\n"
        f'cluster: {{kubernetesVersion: "{KUBERNETES}"}}\n' + body
    )


def environment(tmp: Path, text: str, name: str = NAME) -> Environment:
    """`text` as environments/<name>.yaml beside the shipped _defaults.yaml, loaded."""
    write_environment(tmp, name, text)
    return load(tmp, name)


def rendered(tmp: Path, text: str, name: str = NAME) -> Objects:
    """The rendered objects of the environment `text`, as a YAML reader reads them back."""
    files = render.render_tree(environment(tmp, text, name))
    objects: Objects = {}
    for f in files:
        obj = yaml.safe_load(f.text)  # what kubectl/Argo CD read, not the generator's dict
        meta = obj.get("metadata", {})
        name = f"{meta['namespace']}/{meta['name']}" if "namespace" in meta else meta.get("name", f.path)
        key = (str(obj.get("kind", f.path)), str(name))
        assert key not in objects or not f.is_object, key
        objects[key] = obj
    return objects


def cells(cluster_queue: dict[str, Any]) -> dict[tuple[str, str], dict[str, str]]:
    """(flavor, resource) -> {nominalQuota, borrowingLimit?, lendingLimit?} of a ClusterQueue."""
    out = {}
    for group in cluster_queue["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for cell in flavor["resources"]:
                out[(flavor["name"], cell["name"])] = {k: v for k, v in cell.items() if k != "name"}
    return out
