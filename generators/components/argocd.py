"""rendered/<env>/argocd/: the Argo CD objects that apply rendered/<env>/ to its cluster.

Two AppProject + Application pairs per environment (docs/gitops.md has the why):
- `<project>-<env>`: the environment's Application, a directory source over rendered/<env>
  minus argocd/ and installers/, in a project that allows only this repository, only the environment's
  destination server and exactly the kinds the other components render. The kinds (and
  the fields controllers own) are read off the other components' objects, which the
  render pipeline hands to generate() as `earlier`, so the whitelist cannot drift from what
  is rendered and no kind list is typed by hand.
- `<project>-<env>-bootstrap`: the app-of-apps over rendered/<env>/argocd/ itself, on the
  cluster Argo CD runs in. A person applies this folder once; from then on the bootstrap
  Application keeps the pair above, and itself, in sync with git.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from generators.gitops import health
from generators.gitops.argoglob import literal
from generators.gitops.syncoptions import ANNOTATION as SYNC_OPTIONS
from generators.k8s.objects import Obj
from generators.layout import INSTALLERS, RENDERED
from generators.model.environment import Environment
from generators.output.templating import render

COMPONENT = "argocd"
ARGO_GROUP = "argoproj.io"
# The cluster Argo CD itself runs in, under the name every installation gives it.
IN_CLUSTER = "https://kubernetes.default.svc"
# Deleting an Application or AppProject from git must never cascade into the cluster
# (a vanished ClusterQueue evicts every admitted workload): the bootstrap never prunes them.
KEEP = {SYNC_OPTIONS: "Prune=false"}

KUEUE_GROUP = "kueue.x-k8s.io"
# Kueue's webhook and controllers add this finalizer so that a flavor or queue in use is not
# deleted under admitted workloads; it is not ours to remove.
KUEUE_FINALIZER = "kueue.x-k8s.io/resource-in-use"
KUEUE_FINALIZED_KINDS = frozenset({"ClusterQueue", "ResourceFlavor", "AdmissionCheck"})
# spec fields the API server fills from the Kueue v0.19 CRD defaults when we leave them out
# (tests/gitops check this table against the pinned CRDs). Only fields that no rendered object
# of the kind sets are ignored: a field we render must stay enforced. stopPolicy doubles as
# the operators' brake (Hold / HoldAndDrain during an incident); selfHeal must not undo it.
DEFAULTED_SPEC_FIELDS: dict[tuple[str, str], tuple[str, ...]] = {
    (KUEUE_GROUP, "ClusterQueue"): ("flavorFungibility", "preemption", "queueingStrategy", "stopPolicy"),
    (KUEUE_GROUP, "LocalQueue"): ("stopPolicy",),
}
# Whole-app sync options. Server-side apply is per object (an annotation added centrally for
# large objects), not here, so that ordinary objects keep the simpler client-side diff.
ENV_SYNC_OPTIONS = (
    "ApplyOutOfSyncOnly=true",  # prod renders hundreds of objects; re-apply only what changed
    "PruneLast=true",  # delete only after every wave is healthy again
    "RespectIgnoreDifferences=true",  # a sync must not overwrite the fields ignored below
)


def names(env: Environment) -> tuple[str, str]:
    """(environment app/project name, bootstrap app/project name)."""
    base = f"{env.argocd.project}-{env.name}"
    return base, f"{base}-bootstrap"


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def group_kinds(objects: Iterable[Obj]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(cluster-scoped, namespaced) {group, kind} of `objects`, sorted. An object with
    metadata.namespace is namespaced: that is how the generators place every object."""
    cluster: set[tuple[str, str]] = set()
    namespaced: set[tuple[str, str]] = set()
    for obj in objects:
        scope = namespaced if obj["metadata"].get("namespace") else cluster
        scope.add((group_of(obj["apiVersion"]), obj["kind"]))
    both = cluster & namespaced
    if both:
        raise ValueError(f"kinds rendered both with and without a namespace: {sorted(both)}")
    return (
        [{"group": g, "kind": k} for g, k in sorted(cluster)],
        [{"group": g, "kind": k} for g, k in sorted(namespaced)],
    )


def ignore_differences(objects: list[Obj]) -> list[dict[str, Any]]:
    """Fields controllers own on the rendered objects, which Argo CD must neither report nor
    revert: Kueue's finalizer, CRD-defaulted Kueue fields, replicas of HPA targets. Each entry
    names objects among `objects`: Argo CD applies ignoreDifferences only to the objects the
    Application manages (controller/state.go:774, GetManagedLiveObjs), so an entry for
    anything else would protect nothing."""
    set_fields: dict[tuple[str, str], set[str]] = {}  # (group, kind) -> spec fields any object sets
    for o in objects:
        set_fields.setdefault((group_of(o["apiVersion"]), o["kind"]), set()).update(o.get("spec", {}))
    entries: list[dict[str, Any]] = []
    for (group, kind), rendered in sorted(set_fields.items()):
        pointers = [
            f"/spec/{field}"
            for field in DEFAULTED_SPEC_FIELDS.get((group, kind), ())
            if field not in rendered
        ]
        expressions = []
        if group == KUEUE_GROUP and kind in KUEUE_FINALIZED_KINDS:
            expressions.append(f'.metadata.finalizers[]? | select(. == "{KUEUE_FINALIZER}")')
        if pointers or expressions:
            entry: dict[str, Any] = {"group": group, "kind": kind}
            if pointers:
                entry["jsonPointers"] = pointers
            if expressions:
                entry["jqPathExpressions"] = expressions
            entries.append(entry)
    present = {
        (group_of(o["apiVersion"]), o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
        for o in objects
    }
    managed = [
        e
        for e in hpa_target_replicas(objects)
        if (e["group"], e["kind"], e["namespace"], e["name"]) in present
    ]
    return entries + managed


def hpa_target_replicas(objects: Iterable[Obj]) -> list[dict[str, Any]]:
    """An ignoreDifferences entry for `/spec/replicas` of every object an HPA among `objects`
    scales: the HPA, not git, owns that field. Only the Application that manages the target
    may carry the entry (docs/overflow.md gives the inference owners theirs)."""
    entries = []
    for obj in objects:
        if obj["kind"] != "HorizontalPodAutoscaler":
            continue
        target = obj["spec"]["scaleTargetRef"]
        entries.append(
            {
                "group": group_of(target.get("apiVersion", "")),
                "kind": target["kind"],
                "name": target["name"],
                "namespace": obj["metadata"]["namespace"],
                "jsonPointers": ["/spec/replicas"],
            }
        )
    return sorted(entries, key=lambda e: (e["group"], e["kind"], e["namespace"], e["name"]))


def _argo(template: str, env: Environment, name: str, **fields: Any) -> Obj:
    """An Argo CD object: in Argo CD's namespace, never pruned, about this repository."""
    return render(
        template,
        name=name,
        namespace=env.argocd.namespace,
        annotations=KEEP,
        repo_url=env.argocd.repo_url,
        **fields,
    )


def _project(
    env: Environment, name: str, destination: tuple[str, str], description: str, objects: list[Obj]
) -> Obj:
    """`destination` is (server, namespace glob); kinds are exactly those of `objects`. Argo CD
    matches a destination's server as a glob (app_project_types.go:507-527), so the server is
    escaped: an IPv6 URL's brackets would otherwise be a character class that does not match
    the URL itself, and every object of the environment would be refused."""
    cluster_kinds, namespaced_kinds = group_kinds(objects)
    return _argo(
        "argocd/appproject.yaml.j2",
        env,
        name,
        description=description,
        server=literal(destination[0]),
        destination_namespace=destination[1],
        cluster_kinds=cluster_kinds,
        namespaced_kinds=namespaced_kinds,
    )


def _application(env: Environment, name: str, **spec: Any) -> Obj:
    return _argo(
        "argocd/application.yaml.j2",
        env,
        name,
        project=name,
        source_file=env.source_file,
        target_revision=env.argocd.target_revision,
        **spec,
    )


# What the environment Application must not apply: argocd/ (the bootstrap's folder) and
# installers/ (inputs for other installers, e.g. the Kueue chart's values: not objects).
# Argo CD v3.5's repo server skips a file when glob.Match(directory.Exclude, path relative
# to source.path) (reposerver/repository/repository.go, util/glob over gobwas/glob with no
# separators): `*` spans subfolders and `{a,b}` is an alternation, the form the Argo CD
# docs (user-guide/directory.md, "Excluding Certain Files") give for several patterns.
EXCLUDED_FOLDERS = (COMPONENT, INSTALLERS)


def environment_application(env: Environment, objects: list[Obj]) -> Obj:
    """Applies rendered/<env>/ except argocd/ and installers/ to the cluster."""
    return _application(
        env,
        names(env)[0],
        path=f"{RENDERED}/{env.name}",
        exclude="{" + ",".join(f"{folder}/*" for folder in EXCLUDED_FOLDERS) + "}",
        server=env.argocd.destination_server,
        destination_namespace=None,
        automated={"prune": True, "selfHeal": True} if env.argocd.automated else None,
        sync_options=list(ENV_SYNC_OPTIONS),
        ignore_differences=ignore_differences(objects),
    )


def bootstrap_application(env: Environment) -> Obj:
    """The app-of-apps. Always automated: it only carries reviewed Argo CD objects, and the
    environment Application still syncs by its own policy. It ignores the env app's
    automated block, so a person may pause auto-sync during an incident without selfHeal
    switching it straight back; the next git change to that Application restores it."""
    return _application(
        env,
        names(env)[1],
        path=f"{RENDERED}/{env.name}/{COMPONENT}",
        exclude=None,
        server=IN_CLUSTER,
        destination_namespace=env.argocd.namespace,
        automated={"prune": False, "selfHeal": True},
        sync_options=["ApplyOutOfSyncOnly=true"],
        ignore_differences=[
            {"group": ARGO_GROUP, "kind": "Application", "jsonPointers": ["/spec/syncPolicy/automated"]}
        ],
    )


def generate(env: Environment, earlier: Sequence[Obj]) -> list[Obj]:
    """`earlier`: the objects of every component listed before this one in
    registry.COMPONENTS, which the projects and the environment Application describe."""
    others = list(earlier)
    env_name, bootstrap_name = names(env)
    env_project = _project(
        env,
        env_name,
        (env.argocd.destination_server, "*"),
        f"{env.display_name}: what {RENDERED}/{env.name}/ may create, and where",
        others,
    )
    env_app = environment_application(env, others)
    bootstrap_app = bootstrap_application(env)
    # The bootstrap project's own kinds come from what the bootstrap carries (itself included).
    bootstrap_project = _project(
        env,
        bootstrap_name,
        (IN_CLUSTER, literal(env.argocd.namespace)),
        f"{env.display_name}: the Argo CD objects in {RENDERED}/{env.name}/{COMPONENT}/",
        [env_project, env_app, bootstrap_app],
    )
    return [env_project, env_app, bootstrap_project, bootstrap_app]


HEALTH_INPUT = "argocd-cm-health.yaml"


def installer_inputs(env: Environment) -> dict[str, tuple[str, Obj]]:
    """rendered/<env>/installers/argocd-cm-health.yaml: the argocd-cm health overrides of
    generators/gitops/health.py, as values of the argo-cd Helm chart (`configs.cm` is merged
    into argocd-cm's data). Not a ConfigMap: applied by mistake, a partial argocd-cm would
    replace the whole of the installed one. The same data for every environment, so several
    sharing one Argo CD merge the same keys."""
    header = (
        f"Health overrides for Argo CD's argocd-cm, environment {env.name}: rendered from\n"
        f"{env.source_file} by generators/components/argocd.py; do not edit. Argo CD does not\n"
        "apply this folder. Helm values for the argo-cd chart of the Argo CD that syncs this\n"
        "environment (-f this file, beside your own values); installed another way, copy the\n"
        "keys under configs.cm into the data of its argocd-cm ConfigMap. Objects annotated\n"
        "argocd.argoproj.io/ignore-healthcheck=true (HPAs, grafana-operator objects) then read\n"
        "Healthy, so no sync waits on them; every other object keeps Argo CD's own check.\n"
        "See docs/gitops.md, Health."
    )
    return {HEALTH_INPUT: (header, {"configs": {"cm": health.customizations()}})}
