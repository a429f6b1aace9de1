"""Immutable fields (generators/gitops/immutable.py, docs/immutable-fields.md) without a cluster:
the diff's check on a scratch git checkout, the table against the pinned Kueue CRDs, and the
sync options rendered for the kinds Argo CD recreates.

Expected lines are literals: spec positions of the shipped files (a tier's `value:` in
environments/_defaults.yaml line 24, staging's topology levels line 27, prod's pool
`nodeLabels` lines 23 and 48). That the API really refuses each rule is shown on the box
(tests/box/test_scene_immutable_change.py).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from box.manifests import crd_documents
from generators.gitops import immutable
from generators.gitops.syncoptions import ANNOTATION
from generators.validation.pinned_crds import resolve_crd_dir
from tests.support import ROOT
from tests.support.scratch import run_cli

STAGING_LEVELS = "levels: [topology.trainyard.dev/rack, kubernetes.io/hostname]"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """environments/ and rendered/ of this repository, committed in a scratch git repository."""
    for folder in ("environments", "rendered"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    for argv in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", *argv], cwd=tmp_path, check=True, capture_output=True)
    return tmp_path


def edit(root: Path, name: str, old: str, new: str) -> None:
    path = root / "environments" / name
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_a_tier_value_change_is_noted_once_as_a_recreate_and_passes(checkout: Path) -> None:
    edit(checkout, "_defaults.yaml", "value: 900000", "value: 900100")
    code, _, err = run_cli(checkout, "diff", "--base", "HEAD")
    assert code == 0, err
    assert err.splitlines() == [
        "environments/_defaults.yaml:24:14: note: PriorityClass training value 900000 -> 900100: immutable, "
        "so Argo CD deletes and recreates it (Force=true,Replace=true) (priorities.tiers[1].value); running "
        "pods keep the priority they were admitted with; pods created in the gap are refused by the Priority "
        "admission plugin and retried by their controllers [extended by dev, prod, staging]"
    ]


def test_a_topology_levels_change_is_refused_at_its_line_with_the_migration(checkout: Path) -> None:
    edit(
        checkout,
        "staging.yaml",
        STAGING_LEVELS,
        "levels: [topology.trainyard.dev/block, topology.trainyard.dev/rack, kubernetes.io/hostname]",
    )
    code, out, err = run_cli(checkout, "diff", "--base", "HEAD")
    assert code == 1
    assert "~ Topology.kueue.x-k8s.io train-h100" in out  # the report is still written
    assert err.splitlines() == [
        "environments/staging.yaml:27:15: error: Topology train-h100 spec.levels "
        "[topology.trainyard.dev/rack, kubernetes.io/hostname] -> [topology.trainyard.dev/block, "
        "topology.trainyard.dev/rack, kubernetes.io/hostname]: the API refuses this change in place "
        "(../shared/crds/kueue-v0.19.2/kueue.x-k8s.io_topologies.yaml:137 (CEL self == oldSelf)), so the "
        "Argo CD sync would stop at its wave (pools[0].topology.levels); rename the pool in the same change "
        "(e.g. train-h100 -> train-h100-v2, with its shares and borrowFrom entries): Argo CD creates the new "
        "flavor and topology in wave 1, moves the ClusterQueues to them in wave 2 and prunes the old ones "
        "last, once Kueue releases them (docs/immutable-fields.md)"
    ]


def test_node_labels_are_immutable_only_on_a_topology_flavor(checkout: Path) -> None:
    edit(checkout, "prod.yaml", "gpu.product: NVIDIA-L40S}", "gpu.product: NVIDIA-L40S-48GB}")
    code, _, err = run_cli(checkout, "diff", "--base", "HEAD")
    assert (code, err) == (0, "")  # infer-l40s has no topology: the CRD lets its nodeLabels change
    edit(
        checkout,
        "prod.yaml",
        "nodeLabels: {trainyard.dev/pool: train-h100-b, nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}",
        "nodeLabels: {trainyard.dev/pool: h100-b, nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}",
    )
    code, _, err = run_cli(checkout, "diff", "--base", "HEAD")
    assert code == 1
    assert err.startswith(
        "environments/prod.yaml:36:17: error: ResourceFlavor train-h100-b spec.nodeLabels "
        "{nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, trainyard.dev/pool: train-h100-b} -> "
        "{nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3, trainyard.dev/pool: h100-b}: the API refuses "
        "this change in place (../shared/crds/kueue-v0.19.2/kueue.x-k8s.io_resourceflavors.yaml:374 "
        "(CEL, when topologyName is set))"
    )
    assert (
        "(pools[1].nodeLabels); rename the pool in the same change (e.g. train-h100-b -> train-h100-b-v2"
    ) in err
    assert len(err.splitlines()) == 1


def test_adding_a_topology_to_a_flavor_is_allowed() -> None:
    """The CEL rules apply only once the old flavor has a topologyName."""
    before = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "p"},
        "spec": {"nodeLabels": {"pool": "p"}},
    }
    after = {**before, "spec": {"nodeLabels": {"pool": "q"}, "topologyName": "p"}}
    assert immutable.changes(before, after, "x.yaml") == []
    removed = immutable.changes(after, before, "x.yaml")
    assert [(c.kind, c.field) for c in removed] == [
        ("ResourceFlavor", "spec.nodeLabels"),
        ("ResourceFlavor", "spec.topologyName"),
    ]


def _old_self_fields(schema: dict[str, Any], path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Fields guarded by an oldSelf rule: the rule's own property for `self == oldSelf`, else
    the property its message names (Kueue's spec-level ResourceFlavor rules)."""
    found = set()
    for rule in schema.get("x-kubernetes-validations") or []:
        if "oldSelf" in rule["rule"]:
            first = rule.get("message", "").split()[0]
            found.add(path if rule["rule"] == "self == oldSelf" else (*path, first))
    for name, child in (schema.get("properties") or {}).items():
        found |= _old_self_fields(child, (*path, name))
    return found


def test_the_table_holds_every_old_self_rule_of_the_pinned_kueue_crds_on_rendered_kinds() -> None:
    files = [p for p in (ROOT / "rendered").rglob("*.yaml") if "installers" not in p.parts]
    rendered = {yaml.load(p.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)["kind"] for p in files}
    found = set()
    for crd in crd_documents():
        kind = crd["spec"]["names"]["kind"]
        if crd["spec"]["group"] != "kueue.x-k8s.io" or kind not in rendered:
            continue
        [storage] = [v for v in crd["spec"]["versions"] if v["storage"]]
        found |= {(kind, p) for p in _old_self_fields(storage["schema"]["openAPIV3Schema"])}
    assert found == {
        ("LocalQueue", ("spec", "clusterQueue")),
        ("Topology", ("spec", "levels")),
        ("ResourceFlavor", ("spec", "nodeLabels")),
        ("ResourceFlavor", ("spec", "tolerations")),
        ("ResourceFlavor", ("spec", "topologyName")),
    }
    assert found <= {(r.kind, r.path) for r in immutable.RULES}


def test_each_crd_rule_cites_a_line_holding_its_old_self_rule() -> None:
    for rule in immutable.RULES:
        if rule.enforced_by.startswith("../shared/crds/"):
            file, line = rule.enforced_by.split(" ")[0].rsplit(":", 1)
            # ../shared/crds is the pinned set; resolve_crd_dir() finds it (or its verified copy)
            crd = resolve_crd_dir() / file.removeprefix("../shared/crds/")
            text = crd.read_text(encoding="utf-8").splitlines()[int(line) - 1]
            assert "oldSelf" in text, (rule.kind, rule.path, text)


def test_only_priority_classes_are_rendered_for_delete_and_recreate() -> None:
    options: dict[str, set[str]] = {}
    for path in (ROOT / "rendered").rglob("*.yaml"):
        obj = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        value = ((obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
        if value and "Force=true" in value:
            options.setdefault(obj["kind"], set()).add(value)
    assert options == {"PriorityClass": {"Force=true,Replace=true"}}


def test_the_pr_comment_carries_the_lines(checkout: Path) -> None:
    edit(checkout, "_defaults.yaml", "value: 900000", "value: 900100")
    code, out, _ = run_cli(checkout, "diff", "--base", "HEAD", "--format", "markdown")
    assert code == 0
    assert (
        "**Immutable fields changed** (Argo CD deletes and recreates these objects; "
        "docs/immutable-fields.md):\n\n```text\nenvironments/_defaults.yaml:24:14: note: PriorityClass "
        "training value 900000 -> 900100: immutable, so Argo CD deletes"
    ) in out
