"""What Argo CD v3.5.1 would refuse in a rendered environment, found before anything is
written. The rules are Argo CD's own (../shared/src/argo-cd-3.5.1.tar.gz; file:line inside it):

- a kind its AppProject does not whitelist: the sync refuses the object ("resource G:K is not
  permitted in project P", controller/sync.go:657-658) by
  AppProject.IsGroupKindNamePermitted (pkg/apis/application/v1alpha1/app_project_types.go:399-418:
  a namespaced kind passes a missing namespaceResourceWhitelist, but an empty one passes
  nothing; a cluster-scoped kind needs a non-empty clusterResourceWhitelist; entries match by
  filepath.Match, types.go:3843-3855);
- a namespace outside its destinations: "namespace N is not permitted in project P"
  (controller/sync.go:660-667) by IsDestinationPermitted / isDestinationMatched
  (app_project_types.go:483-527: server and namespace are globs, `*` matches anything, `!`
  denies); the Application's own destination is checked the same way (util/argo/argo.go:702-715);
- a source repository outside sourceRepos: "application repo R is not permitted in project P"
  (util/argo/argo.go:686-689) by IsSourcePermitted (app_project_types.go:461-480: both sides
  lower-cased and stripped of `.git` by git.NormalizeGitURL, util/git/git.go:63-80, then
  matched as a glob with `/` as separator);
- a kind Argo CD excludes by default (events.k8s.io, metrics.k8s.io, core Event,
  coordination.k8s.io Lease: util/settings/resources_filter.go:7-11): dropped from the target
  objects with only a warning condition (controller/state.go:753-761), so it is never applied;
- an Application whose source applies no rendered file: the repo server finds no manifest
  there (generators/gitops/sources.py), so an automated Application with prune would delete
  everything it applied before.

Argo CD reads an object's scope from the cluster's discovery; the render reads it off the
object (namespaced iff metadata.namespace is set), which is how the generators place every
object and how the whitelist is derived (generators/components/argocd.py).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from generators.errors import Location, Problem
from generators.gitops.argoglob import matches
from generators.gitops.sources import applied
from generators.k8s.objects import Obj
from generators.layout import RENDERED

# util/settings/resources_filter.go:7-11: (group, kind), "*" for every kind of the group.
CORE_EXCLUDED = {
    ("events.k8s.io", "*"),
    ("metrics.k8s.io", "*"),
    ("", "Event"),
    ("coordination.k8s.io", "Lease"),
}
HINT = "a generator rendered what its own Argo CD objects do not allow: report it (docs/gitops.md)"


@dataclass(frozen=True)
class File:
    """A rendered object and its path relative to rendered/<env>/."""

    path: str
    obj: Obj


def _filepath_match(pattern: str, name: str) -> bool:
    # Go's filepath.Match: `*` and `?` stop at '/', which no group or kind contains.
    return fnmatch.fnmatchcase(name, pattern)


def _in_list(group: str, kind: str, name: str, items: Iterable[Mapping[str, str]]) -> bool:
    return any(
        _filepath_match(item.get("kind", ""), kind)
        and _filepath_match(item.get("group", ""), group)
        and (not item.get("name") or _filepath_match(item["name"], name))
        for item in items
    )


def kind_permitted(project: Obj, group: str, kind: str, name: str, namespaced: bool) -> bool:
    """AppProject.IsGroupKindNamePermitted (app_project_types.go:399-418)."""
    spec = project.get("spec", {})
    if namespaced:
        white = spec.get("namespaceResourceWhitelist")
        black = spec.get("namespaceResourceBlacklist") or []
        allowed = white is None or (len(white) > 0 and _in_list(group, kind, "", white))
        return allowed and not (black and _in_list(group, kind, "", black))
    white = spec.get("clusterResourceWhitelist") or []
    black = spec.get("clusterResourceBlacklist") or []
    return (
        bool(white)
        and _in_list(group, kind, name, white)
        and not (black and _in_list(group, kind, name, black))
    )


def _glob(pattern: str, value: str, separators: str = "") -> bool:
    """globMatch with negation (app_project_types.go:438-447)."""
    if pattern.startswith("!"):
        return not matches(pattern[1:], value, separators)
    return pattern == "*" or matches(pattern, value, separators)


def destination_permitted(project: Obj, server: str, namespace: str) -> bool:
    """isDestinationMatched for a destination given by server (app_project_types.go:507-527)."""
    matched = False
    for item in project.get("spec", {}).get("destinations", []):
        server_ok = bool(server) and _glob(item.get("server", ""), server)
        namespace_ok = _glob(item.get("namespace", ""), namespace)
        denied_server = not server_ok and item.get("server", "").startswith("!") and namespace_ok
        denied_namespace = not namespace_ok and item.get("namespace", "").startswith("!") and server_ok
        if server_ok and namespace_ok:
            matched = True
        elif denied_server or denied_namespace:
            return False
    return matched


def normalize_git_url(url: str) -> str:
    """git.NormalizeGitURL for https URLs (util/git/git.go:63-80): lower-cased, trimmed, no `.git`."""
    return url.strip().lower().removesuffix(".git")


def source_permitted(project: Obj, repo_url: str) -> bool:
    """AppProject.IsSourcePermitted (app_project_types.go:461-480)."""
    source = normalize_git_url(repo_url)
    any_matched = False
    for pattern in project.get("spec", {}).get("sourceRepos", []):
        deny = pattern.startswith("!")
        normalized = ("!" if deny else "") + normalize_git_url(pattern.removeprefix("!"))
        if _glob(normalized, source, "/"):
            any_matched = True
        elif deny:
            return False
    return any_matched


def _group(obj: Obj) -> str:
    return str(obj.get("apiVersion", "")).rpartition("/")[0]


def refusals(env: str, files: Sequence[File]) -> list[Problem]:
    """One Problem per thing Argo CD would refuse, at the rendered file it concerns."""
    at = {f.path: f for f in files}
    projects = {
        (f.obj["metadata"].get("namespace", ""), f.obj["metadata"]["name"]): f.obj
        for f in files
        if f.obj.get("kind") == "AppProject"
    }
    problems: list[Problem] = []
    seen: set[str] = set()

    def refuse(path: str, message: str) -> None:
        """One line per reason (a kind, a namespace), at the first file it concerns."""
        if message not in seen:
            seen.add(message)
            problems.append(Problem(Location(f"{RENDERED}/{env}/{path}"), message, hint=HINT))

    for app_file in files:
        app = app_file.obj
        if app.get("kind") != "Application":
            continue
        name, spec = app["metadata"]["name"], app["spec"]
        project = projects.get((app["metadata"].get("namespace", ""), spec["project"]))
        if project is None:
            refuse(app_file.path, f"Application {name} names AppProject {spec['project']}, not rendered")
            continue
        server = spec["destination"]["server"]
        if not source_permitted(project, spec["source"]["repoURL"]):
            repo = spec["source"]["repoURL"]
            refuse(
                app_file.path,
                f"Application {name}: repo {repo} is not permitted in project {spec['project']}",
            )
        if not destination_permitted(project, server, spec["destination"].get("namespace", "")):
            refuse(
                app_file.path,
                f"Application {name}: destination {server} not permitted in project {spec['project']}",
            )
        prefix = f"{RENDERED}/{env}/"
        chosen = [p.removeprefix(prefix) for p in applied(spec["source"], [prefix + p for p in at])]
        if not chosen:
            refuse(
                app_file.path,
                f"Application {name}: source path {spec['source']['path']} applies no rendered file, "
                "so Argo CD would apply nothing (and prune what it applied before)",
            )
        for path in chosen:
            obj = at[path].obj
            if "kind" not in obj:  # an installer input: the repo server skips it (repository.go:2063-2074)
                continue
            meta = obj.get("metadata", {})
            # The scope is read off the object, never from the destination: Argo CD reads it
            # from discovery and checks a cluster-scoped kind against the cluster whitelist
            # and no namespace, whatever the Application's destination namespace (on the box,
            # docs/gitops.md).
            namespace = meta.get("namespace") or ""
            group = _group(obj)
            if (group, "*") in CORE_EXCLUDED or (group, obj["kind"]) in CORE_EXCLUDED:
                refuse(
                    path,
                    f"{group or 'core'}/{obj['kind']} is excluded by Argo CD's defaults: "
                    "it would never apply it",
                )
            elif not kind_permitted(project, group, obj["kind"], meta.get("name", ""), bool(namespace)):
                kind = f"{group or 'core'}/{obj['kind']}"
                refuse(
                    path, f"{kind} is not in project {spec['project']}'s whitelist: Argo CD would not sync it"
                )
            elif namespace and not destination_permitted(project, server, namespace):
                refuse(
                    path,
                    f"namespace {namespace} is not in project {spec['project']}'s destinations: "
                    "Argo CD would not sync it",
                )
    return problems
