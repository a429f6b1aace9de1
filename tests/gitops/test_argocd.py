"""The rendered Argo CD objects: what each project allows, where each Application points,
how it syncs, and the sync waves on every object (read from the committed rendered/)."""

from __future__ import annotations

import fnmatch
import itertools
import json
import shutil
import subprocess
from functools import cache
from typing import Any

import pytest
import yaml

from generators.components import argocd
from generators.gitops.syncwaves import wave
from generators.k8s.objects import Obj
from generators.model.load import load
from generators.validation.kubeconform import run_kubeconform
from generators.validation.schemastore import default_crd_dir, ensure_schemas
from tests.support import ROOT, tool

from .conftest import ENVIRONMENTS, rendered_files, rendered_objects

ARGO_DIR = "argocd/"
INSTALLERS_DIR = "installers/"
WAVE = "argocd.argoproj.io/sync-wave"
# The apply order the mission needs (docs/gitops.md, "Sync waves"), tier by tier; each
# tier's waves come strictly before the next one's. Kinds not rendered yet are checked
# through the table in syncwaves.py.
APPLY_ORDER: tuple[frozenset[str], ...] = (
    frozenset({"Namespace", "PriorityClass", "WorkloadPriorityClass"}),
    frozenset({"ResourceFlavor", "Cohort", "Topology"}),
    frozenset({"ClusterQueue"}),
    frozenset({"LocalQueue"}),
    frozenset({"Deployment", "DaemonSet", "HorizontalPodAutoscaler", "PodDisruptionBudget"}),
)


@cache
def _crds() -> tuple[Any, ...]:
    """Every pinned CRD document (schemas/crds.lock, default_crd_dir()), parsed once with the C loader."""
    documents = []
    for path in sorted(default_crd_dir().rglob("*.yaml")):
        for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                documents.append(doc)
    return tuple(documents)


def _by_kind(objects: dict[str, Obj], kind: str) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in objects.values() if o["kind"] == kind}


def _argo(env: str) -> tuple[dict[str, Obj], dict[str, Obj]]:
    """(AppProjects, Applications) of rendered/<env>/argocd/, by name."""
    objects = {p: o for p, o in rendered_objects(env).items() if p.startswith(ARGO_DIR)}
    return _by_kind(objects, "AppProject"), _by_kind(objects, "Application")


def _kinds(objects: list[Obj]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(cluster-scoped, namespaced) (group, kind) of objects, as placed in the files."""
    cluster: set[tuple[str, str]] = set()
    namespaced: set[tuple[str, str]] = set()
    for obj in objects:
        key = (obj["apiVersion"].rpartition("/")[0], obj["kind"])
        (namespaced if obj["metadata"].get("namespace") else cluster).add(key)
    return cluster, namespaced


def _whitelist(project: Obj) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    spec = project["spec"]
    cluster = [(i["group"], i["kind"]) for i in spec["clusterResourceWhitelist"]]
    namespaced = [(i["group"], i["kind"]) for i in spec["namespaceResourceWhitelist"]]
    assert len(set(cluster)) == len(cluster) and len(set(namespaced)) == len(namespaced)
    return set(cluster), set(namespaced)


def test_project_whitelist_is_exactly_the_kinds_rendered(env: str) -> None:
    objects = rendered_objects(env)
    workload = [o for p, o in objects.items() if not p.startswith(ARGO_DIR)]
    projects, _ = _argo(env)
    cluster, namespaced = _whitelist(projects[f"trainyard-{env}"])
    assert (cluster, namespaced) == _kinds(workload)
    assert ("kueue.x-k8s.io", "ClusterQueue") in cluster  # the check sees real content
    assert ("kueue.x-k8s.io", "LocalQueue") in namespaced


def test_whitelist_scope_matches_the_crds(env: str) -> None:
    """A namespaced CRD kind placed in the cluster list (or the reverse) is refused by Argo CD."""
    scopes = {(crd["spec"]["group"], crd["spec"]["names"]["kind"]): crd["spec"]["scope"] for crd in _crds()}
    projects, _ = _argo(env)
    cluster, namespaced = _whitelist(projects[f"trainyard-{env}"])
    checked = 0
    for key in cluster | namespaced:
        if key in scopes:
            assert scopes[key] == ("Namespaced" if key in namespaced else "Cluster"), key
            checked += 1
    assert checked >= 4


def test_project_allows_only_this_repository_and_the_environment_cluster(env: str) -> None:
    spec = load(ROOT, env).argocd
    projects, _ = _argo(env)
    project = projects[f"trainyard-{env}"]["spec"]
    assert project["sourceRepos"] == [spec.repo_url]
    assert project["destinations"] == [{"server": spec.destination_server, "namespace": "*"}]


def test_application_syncs_the_environment_folder_except_argocd(env: str) -> None:
    spec = load(ROOT, env).argocd
    _, apps = _argo(env)
    app = apps[f"trainyard-{env}"]["spec"]
    assert app["project"] == f"trainyard-{env}"
    assert app["source"]["repoURL"] == spec.repo_url
    assert app["source"]["targetRevision"] == spec.target_revision
    assert app["source"]["path"] == f"rendered/{env}"
    assert app["destination"] == {"server": spec.destination_server}
    directory = app["source"]["directory"]
    assert directory["recurse"] is True
    files = rendered_files(env)
    excluded = {p for p in files if argo_glob_match(directory["exclude"], p)}
    assert excluded == {p for p in files if p.startswith((ARGO_DIR, INSTALLERS_DIR))}
    # the Argo CD objects; Kueue, GPU operator, kube-prometheus-stack and argo-cd values
    assert len(excluded) == 4 + 4


def argo_glob_match(pattern: str, path: str) -> bool:
    """Argo CD's directory.exclude match (util/glob over gobwas/glob, no separators, against
    the path relative to source.path): `*` crosses '/', `{a,b}` is an alternation (one level,
    all our patterns need). fnmatch alone knows no braces."""
    head, brace, rest = pattern.partition("{")
    if not brace:
        return fnmatch.fnmatchcase(path, pattern)
    inner, closing, tail = rest.partition("}")
    assert closing and "{" not in inner, f"unsupported pattern {pattern!r}"
    return any(fnmatch.fnmatchcase(path, head + alternative + tail) for alternative in inner.split(","))


def test_argo_glob_match_is_not_a_rubber_stamp() -> None:
    assert argo_glob_match("{argocd/*,installers/*}", "installers/kueue-values.yaml")
    assert argo_glob_match("{argocd/*,installers/*}", "argocd/argocd/application-x.yaml")
    assert not argo_glob_match("{argocd/*,installers/*}", "kueue/clusterqueue-a.yaml")
    assert not argo_glob_match("{argocd/*,installers/*}", "kueue/installers/x.yaml")


def test_automated_iff_the_environment_says_automated(env: str) -> None:
    automated = load(ROOT, env).argocd.automated
    _, apps = _argo(env)
    policy = apps[f"trainyard-{env}"]["spec"]["syncPolicy"]
    if automated:
        assert policy["automated"] == {"prune": True, "selfHeal": True}
    else:
        assert "automated" not in policy
    assert set(policy["syncOptions"]) == {
        "ApplyOutOfSyncOnly=true",
        "PruneLast=true",
        "RespectIgnoreDifferences=true",
    }


def test_shipped_sync_policies_are_the_issues_example() -> None:
    """Production waits for a person; staging and dev follow main by themselves."""
    policies = {}
    for env in ENVIRONMENTS:
        _, apps = _argo(env)
        policies[env] = "automated" in apps[f"trainyard-{env}"]["spec"]["syncPolicy"]
    assert policies == {"dev": True, "prod": False, "staging": True}


def test_bootstrap_manages_only_the_argocd_folder_on_the_argo_cluster(env: str) -> None:
    namespace = load(ROOT, env).argocd.namespace
    projects, apps = _argo(env)
    bootstrap = apps[f"trainyard-{env}-bootstrap"]["spec"]
    assert bootstrap["project"] == f"trainyard-{env}-bootstrap"
    assert bootstrap["source"]["path"] == f"rendered/{env}/argocd"
    assert "exclude" not in bootstrap["source"]["directory"]
    assert bootstrap["destination"] == {"server": argocd.IN_CLUSTER, "namespace": namespace}
    assert bootstrap["syncPolicy"]["automated"] == {"prune": False, "selfHeal": True}
    project = projects[f"trainyard-{env}-bootstrap"]["spec"]
    assert project["destinations"] == [{"server": argocd.IN_CLUSTER, "namespace": namespace}]
    own = [o for p, o in rendered_objects(env).items() if p.startswith(ARGO_DIR)]
    assert _whitelist(projects[f"trainyard-{env}-bootstrap"]) == _kinds(own)
    for obj in own:  # removing one from git must never cascade into the cluster
        assert obj["metadata"]["namespace"] == namespace
        assert obj["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] == "Prune=false"


def test_names_are_unique_across_environments() -> None:
    """Environments may share one Argo CD instance: no two may own the same object."""
    seen: dict[tuple[str, str], str] = {}
    for env in ENVIRONMENTS:
        projects, apps = _argo(env)
        for kind, names in (("AppProject", projects), ("Application", apps)):
            for name in names:
                assert (kind, name) not in seen, f"{kind}/{name} in {env} and {seen[(kind, name)]}"
                seen[(kind, name)] = env
    assert len(seen) == 4 * len(ENVIRONMENTS)


def test_every_object_carries_its_sync_wave(env: str) -> None:
    for path, obj in rendered_objects(env).items():
        value = obj["metadata"].get("annotations", {}).get(WAVE)
        assert value == str(wave(obj["kind"])), f"rendered/{env}/{path}: sync-wave {value!r}"


def test_waves_follow_the_apply_order(env: str) -> None:
    waves: dict[str, set[int]] = {}
    for obj in rendered_objects(env).values():
        waves.setdefault(obj["kind"], set()).add(int(obj["metadata"]["annotations"][WAVE]))
    tiers = [{w for kind in tier for w in waves.get(kind, {wave(kind)})} for tier in APPLY_ORDER]
    for earlier, later in itertools.pairwise(tiers):
        assert max(earlier) < min(later), tiers
    assert {"Namespace", "ResourceFlavor", "ClusterQueue", "LocalQueue"} <= set(waves)
    assert max(waves["AppProject"]) < min(waves["Application"])  # a project before its apps


def test_argocd_objects_pass_kubeconform_strict() -> None:
    tool("kubeconform")
    schemas = ensure_schemas("1.36", default_crd_dir())
    folders = [ROOT / "rendered" / env / "argocd" for env in ENVIRONMENTS]
    result = run_kubeconform(folders, "1.36", schemas)
    assert [f.line() for f in result.findings] == []
    assert result.valid == result.expected == 4 * len(ENVIRONMENTS)


def test_finalizer_expression_removes_only_kueues_finalizer() -> None:
    """Argo CD evaluates del(<expression>) with gojq; jq reads the expression the same way."""
    jq = shutil.which("jq")
    if jq is None:
        pytest.skip("jq is not installed")
    _, apps = _argo("prod")
    entries = apps["trainyard-prod"]["spec"]["ignoreDifferences"]
    expression = next(e["jqPathExpressions"][0] for e in entries if e["kind"] == "ClusterQueue")
    live = {"metadata": {"finalizers": ["example.com/keep", argocd.KUEUE_FINALIZER]}}
    for document, want in (
        (live, {"metadata": {"finalizers": ["example.com/keep"]}}),
        ({"metadata": {}}, {"metadata": {}}),
    ):
        done = subprocess.run(
            [jq, "-c", f"del({expression})"],
            input=json.dumps(document),
            capture_output=True,
            text=True,
            check=True,
        )
        assert json.loads(done.stdout) == want


def _spec_defaults(crd: Any) -> set[str]:
    """spec fields the API server fills in from the CRD's structural defaults."""
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    spec = version["schema"]["openAPIV3Schema"]["properties"].get("spec", {}).get("properties", {})
    return {field for field, schema in spec.items() if "default" in schema}


def test_defaulted_fields_table_matches_the_kueue_crds() -> None:
    kueue = {
        crd["spec"]["names"]["kind"]: crd for crd in _crds() if crd["spec"]["group"] == argocd.KUEUE_GROUP
    }
    for (group, kind), fields in argocd.DEFAULTED_SPEC_FIELDS.items():
        assert group == argocd.KUEUE_GROUP
        assert set(fields) == _spec_defaults(kueue[kind]), kind
    # No kind we render with defaults left out of the table (Workload & co. are not ours).
    rendered = {o["kind"] for env in ENVIRONMENTS for o in rendered_objects(env).values()}
    for kind, crd in kueue.items():
        if kind in rendered and _spec_defaults(crd):
            assert (argocd.KUEUE_GROUP, kind) in argocd.DEFAULTED_SPEC_FIELDS, kind
