"""`cluster.argocd` values Argo CD v3.5.1 would refuse (its source: ../shared/src/argo-cd-3.5.1.tar.gz).

The AppProject's `sourceRepos` holds `repoURL`, and Argo CD matches an Application's repository
against each entry as a glob with `/` as separator, after git.NormalizeGitURL has lower-cased
both, trimmed `.git` and re-printed them with Go's net/url (AppProject.IsSourcePermitted,
pkg/apis/application/v1alpha1/app_project_types.go:461-480; util/git/git.go:63-80). Two things
then keep the URL from matching itself, so that every sync is refused ("application repo ...
is not permitted in project", util/argo/argo.go:686-689):
- a `[` (an IPv6 host, or a path segment): net/url keeps it as is, and gobwas/glob reads it as
  a character class (or fails to compile the entry, which util/glob/glob.go:31-38 reads as no
  match);
- a leading `!`: the entry becomes a deny pattern (app_project_types.go:441-443, 470-471).
Other glob characters match themselves or are percent-encoded by net/url first. Escaping is
no way out: the entry is parsed as a URL before it is a glob. The destination server needs no
check: the render escapes it (generators/components/argocd.py), and the rendered objects are
checked against the rendered projects after the render (generators/gitops/permissions.py).
"""

from __future__ import annotations

from typing import Any

from generators.errors import Problem, format_path
from generators.model.checks.where import section
from generators.model.environment import Environment
from generators.model.fromspec import take
from generators.model.types import ArgoCD
from generators.spec.source import Document


def check(doc: Document, value: dict[str, Any]) -> list[Problem]:
    argocd: ArgoCD = take(Environment, "argocd", value)
    url = argocd.repo_url
    if "[" in url:
        what = "holds [, which Argo CD's glob reads as a character class"
    elif url.startswith("!"):
        what = "starts with !, which makes it a deny pattern"
    else:
        return []
    path = section((Environment, "argocd"), (ArgoCD, "repo_url"))
    return [
        Problem(
            doc.locate(path),
            f"repoURL {what} in the AppProject's sourceRepos: it would not match the repository, "
            "and Argo CD would refuse every sync",
            format_path(path),
            "use a clone URL without [ (a DNS name for an IPv6 host)",
        )
    ]
