"""generators/gitops/argoglob.py: Argo CD's glob, against gobwas/glob v0.2.3's documented syntax
(glob.go:11-36) and how Argo CD calls it (util/glob/glob.go:31-38)."""

from __future__ import annotations

import pytest

from generators.gitops.argoglob import literal, matches


@pytest.mark.parametrize(
    ("pattern", "text", "separators", "expected"),
    [
        ("{argocd/*,installers/*}", "argocd/argocd/app.yaml", "", True),  # `*` crosses `/` without separators
        ("{argocd/*,installers/*}", "installers/kueue-values.yaml", "", True),
        ("{argocd/*,installers/*}", "kueue/clusterqueue-a.yaml", "", False),
        ("https://github.com/example/*", "https://github.com/example/repo", "/", True),
        ("https://github.com/example/*", "https://github.com/example/a/repo", "/", False),
        ("https://github.com/**", "https://github.com/example/a/repo", "/", True),
        ("team-?", "team-a", "", True),
        ("team-?", "team-ab", "", False),
        ("pool-[a-c]", "pool-b", "", True),
        ("pool-[!a-c]", "pool-b", "", False),
        ("https://[fd00::1]:6443", "https://[fd00::1]:6443", "", False),  # a class, not brackets
        ("https://\\[fd00::1\\]:6443", "https://[fd00::1]:6443", "", True),
        ("repo[1", "repo[1", "", False),  # does not compile: no match
        ("a,b", "a,b", "", True),  # a comma is literal outside braces
    ],
)
def test_matches_as_gobwas(pattern: str, text: str, separators: str, expected: bool) -> None:
    assert matches(pattern, text, separators) is expected


@pytest.mark.parametrize(
    "text", ["https://[fd00::1]:6443", "a*b?c{d,e}\\f!", "https://kubernetes.default.svc"]
)
def test_literal_matches_exactly_itself(text: str) -> None:
    assert matches(literal(text), text)
    assert not matches(literal(text), text + "x")


def test_literal_leaves_plain_text_alone() -> None:
    assert literal("https://kubernetes.default.svc") == "https://kubernetes.default.svc"
