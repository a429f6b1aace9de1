"""`generate.py validate`: shipped environments are clean; kubeconform, staleness, spec and
promtool findings; output formats and exit codes; the policy registry's contract."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from generators.validation import checks, promtool
from generators.validation.schemastore import strict_dir_name
from policies import POLICIES, registry
from policies.context import read_objects
from tests.support import ROOT, tool

from .conftest import DEV, Repo, Run, expect, meta, problems

Validate = Callable[..., Run]


def dev_objects() -> int:
    """Objects in the shipped rendered/dev (one per file, as render writes them; the
    installer inputs under installers/ are not objects, and validate must not count them)."""
    files = [p for p in (ROOT / DEV).rglob("*.yaml") if p.relative_to(ROOT / DEV).parts[0] != "installers"]
    assert len(files) < len(list((ROOT / DEV).rglob("*.yaml"))), "dev ships an installer input"
    return len(files)


def dev_rules() -> dict[str, int]:
    """Rule files and rules shipped in rendered/dev, counted without promtool."""
    tree = read_objects(ROOT, sorted((ROOT / DEV).rglob("*.yaml")))
    sources = promtool.rule_sources(tree.objects)
    rules = sum(len(group["rules"]) for source in sources for group in source.groups["groups"])
    return {"files": len(sources), "rules": rules}


def test_shipped_environments_validate_clean(validate: Validate) -> None:
    run = validate(ROOT)
    assert run.code == 0, run.out
    summaries = [line for line in run.lines if not line.startswith("total:")]
    assert all(" 0 findings (0 errors, 0 warnings); kubeconform " in line for line in summaries), run.out
    for line in summaries:  # kubeconform validated every object it was given
        objects = int(line.split(": ", 1)[1].split(" objects")[0])
        assert f"kubeconform {objects}/{objects} valid" in line, line
    assert len(summaries) == len(list((ROOT / "environments").glob("[!_]*.yaml")))


def test_json_output_shape(repo: Repo, validate: Validate) -> None:
    repo.edit(
        f"{DEV}/kueue/sandbox/localqueue-sandbox.yaml", lambda lq: lq["spec"].update(clusterQueue="gone")
    )
    run = validate(repo.root, "dev", "--format", "json")
    assert run.code == 1
    document = run.json()
    assert set(document) == {"ok", "seconds", "environments", "findings"}
    assert document["ok"] is False
    (env,) = document["environments"]
    assert set(env) == {
        "name",
        "objects",
        "findings",
        "errors",
        "warnings",
        "seconds",
        "kubeconform",
        "policies",
        "rules",
    }
    assert env["name"] == "dev" and env["findings"] == len(document["findings"]) == 2
    n = dev_objects()
    assert env["objects"] == n
    assert env["kubeconform"] == {"valid": n, "invalid": 0, "errors": 0, "skipped": 0, "expected": n}
    assert env["rules"] == dev_rules() and env["policies"] == len(POLICIES)
    assert sorted(f["policy"] for f in document["findings"]) == ["references", "stale"]
    for finding in document["findings"]:
        assert set(finding) == {"file", "kind", "name", "policy", "severity", "message"}
        assert finding["file"] == f"{DEV}/kueue/sandbox/localqueue-sandbox.yaml"
        assert (finding["kind"], finding["name"], finding["severity"]) == ("LocalQueue", "sandbox", "error")


def test_kubeconform_findings(repo: Repo, validate: Validate) -> None:
    repo.edit(
        f"{DEV}/kueue/clusterqueue-platform.yaml",
        lambda cq: cq["spec"].update(queueingStrategy="Fastest", surprise=True),
    )
    repo.write(
        f"{DEV}/fixture/widget-w.yaml",
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta("w", "fixture", 4)},
    )
    run = validate(repo.root, "dev")
    assert run.code == 1
    found = problems(run)
    assert (
        f"{DEV}/fixture/widget-w.yaml: Widget/w: kubeconform: no-schema: no schema for "
        "example.com/v1 Widget (is its CRD pinned?)" in found
    ), run.out
    invalid = [
        line
        for line in found
        if line.startswith(
            f"{DEV}/kueue/clusterqueue-platform.yaml: ClusterQueue/platform: kubeconform: invalid: "
        )
    ]
    assert any("/spec/queueingStrategy" in line for line in invalid), run.out
    assert any("surprise" in line for line in invalid), run.out  # -strict: unknown field
    n = dev_objects() + 1
    assert f"dev: {n} objects" in run.out and f"kubeconform {n - 2}/{n} valid" in run.out


def test_stale_missing_and_spec_errors(repo: Repo, validate: Validate) -> None:
    (repo.root / DEV / "priorities/priorityclass-training.yaml").unlink()
    env = repo.root / "environments/staging.yaml"
    env.write_text(env.read_text().replace("nodes: ", "nodes: many #", 1))
    run = validate(repo.root, "dev", "staging")
    assert run.code == 1
    assert (
        f"{DEV}/priorities/priorityclass-training.yaml: PriorityClass/training: stale: "
        "environments/dev.yaml renders it but it is not committed; run: python generate.py "
        "render dev" in run.lines
    )
    spec = [line for line in run.lines if line.startswith("environments/staging.yaml:")]
    assert len(spec) == 1 and ": spec: " in spec[0], run.out
    # a missing PriorityClass is also a dangling reference? No: nothing names it in dev.
    assert "staging: 0 objects, 1 findings" in run.out


def test_promtool_checks_rule_groups(repo: Repo, validate: Validate) -> None:
    tool("promtool")
    good = {"name": "gpus", "rules": [{"record": "trainyard:gpus:sum", "expr": "sum(up)"}]}
    bad = {"name": "broken", "rules": [{"alert": "Broken", "expr": "sum(up"}]}
    rule: dict[str, Any] = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": meta("gpus", "fixture", 5, "sandbox"),
        "spec": {"groups": [good]},
    }
    repo.write(f"{DEV}/fixture/sandbox/prometheusrule-gpus.yaml", rule)
    run = validate(repo.root, "dev")
    shipped = dev_rules()
    assert problems(run) == [], run.out
    assert f"{shipped['rules'] + 1} rules in {shipped['files'] + 1} files" in run.out, run.out
    rule["spec"]["groups"].append(bad)
    repo.write(f"{DEV}/fixture/sandbox/prometheusrule-gpus.yaml", rule)
    run = validate(repo.root, "dev")
    found = problems(run)
    assert run.code == 1 and len(found) >= 1, run.out
    assert all(
        line.startswith(
            f"{DEV}/fixture/sandbox/prometheusrule-gpus.yaml: PrometheusRule/gpus: promtool: spec.groups: "
        )
        for line in found
    ), run.out
    assert any("Broken" in line or "parse" in line for line in found), run.out


def test_usage_errors_exit_2(validate: Validate) -> None:
    run = validate(ROOT, "nope")
    assert run.code == 2 and "unknown environment 'nope'" in run.err
    with pytest.raises(SystemExit) as exit_info:
        validate(ROOT, "--format", "xml")
    assert exit_info.value.code == 2


def test_list_and_registry_contract(validate: Validate) -> None:
    run = validate(ROOT, "--list")
    assert run.code == 0
    policies = registry()
    ids = [p.id for p in policies]
    assert len(ids) == len(set(ids)) == len(POLICIES) >= 9
    for policy, line in zip(policies, run.lines, strict=True):
        assert line == f"{policy.id} ({policy.severity}): {policy.rationale}"
        assert policy.rationale and "\n" not in policy.rationale and len(policy.rationale) < 200
    documented = (ROOT / "docs/validation.md").read_text()
    assert all(f"`{i}`" in documented for i in ids), "docs/validation.md lists every policy"
    expect_ids = {
        "quota-conservation",
        "references",
        "priorities",
        "taints",
        "rbac",
        "workloads",
        "size",
        "names",
        "sync-waves",
    }
    assert expect_ids <= set(ids)


def test_expect_helper_rejects_clean_runs(repo: Repo, validate: Validate) -> None:
    """The fixtures' assertion cannot pass on a clean tree (a test that cannot fail is a defect)."""
    run = validate(repo.root, "dev")
    assert run.code == 0, run.out
    with pytest.raises(AssertionError):
        expect(run, "anything")


def test_schema_that_does_not_compile_fails(
    repo: Repo, validate: Validate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kubeconform drops a schema it cannot compile and calls the object schema-less:
    validate must fail on it, not pass it by."""
    real = checks.schema_dir("1.36.2")
    broken = tmp_path / "schemas"
    shutil.copytree(real, broken, symlinks=True)
    (broken / strict_dir_name("1.36.2") / "namespace-v1.json").write_text('{"type": 12}')
    monkeypatch.setattr(checks, "schema_dir", lambda version: broken)
    run = validate(repo.root, "dev")
    expect(
        run,
        *(
            f"{DEV}/namespaces/namespace-{ns}.yaml: Namespace/{ns}: kubeconform: no-schema: "
            "no schema for v1 Namespace (is its CRD pinned?)"
            for ns in ("platform-dev", "sandbox")
        ),
    )
    assert f"kubeconform {dev_objects() - 2}/{dev_objects()} valid" in run.out


def test_orphaned_rendered_directory(repo: Repo, validate: Validate) -> None:
    """Argo CD's directory generator deploys every rendered/<dir>: one without an
    environment file is a finding when all environments are validated."""
    shutil.copytree(repo.root / DEV, repo.root / "rendered/old")
    run = validate(repo.root)
    assert run.code == 1
    assert run.findings("stale") == [
        "rendered/old/: stale: no environments/*.yaml renders this directory; run: python generate.py render"
    ], run.out
    assert problems(run) == [], run.out
    assert validate(repo.root, "dev").code == 0  # naming environments checks only those
