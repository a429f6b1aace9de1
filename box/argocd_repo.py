"""The git repository Argo CD reads in the box: a copy of the checkout's environments/ and
its render, committed, served as a bare repository over `file://`.

The rendered Applications and AppProjects name the repository and the destination cluster
from the spec (`cluster.argocd.repoURL`, `destinationServer`: github.com and a cluster
URL the box does not have). The box never edits rendered bytes: it writes a copy of the
spec with those two settings pointed at the box (the bare repository, the box's apiserver),
on top of the scaled and sped-up copy `--scale`/`--speed` already render (box/scale.py),
and the real generators render that copy into the repository. So every object Argo CD
applies is one `generate.py render` wrote for that spec, and the only difference from the
checkout's rendered/<env>/ is the two URLs (and the node counts, with --scale).

Transport: Argo CD v3.5.1's git client fetches a `file://` URL as is (go-git and the git
CLI both take it; ../shared/src/SOURCES.txt, entry 4), so no git daemon or HTTP server runs.
A change lands the way a merged pull request does: a commit on the target branch, pushed.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from box.scale import scaled_checkout
from generators.layout import ENV_DIR, RENDERED
from generators.model.environment import Environment
from generators.model.load import load
from generators.pipeline.render import RenderedFile, render_tree, stage, swap

GIT_AUTHOR = {
    "GIT_AUTHOR_NAME": "trainyard box",
    "GIT_AUTHOR_EMAIL": "box@trainyard.invalid",
    "GIT_COMMITTER_NAME": "trainyard box",
    "GIT_COMMITTER_EMAIL": "box@trainyard.invalid",
}


class RepoError(RuntimeError):
    """A git command failed; the message ends with its output."""


def pointed_spec(text: str, repo_url: str, server: str, source: str) -> str:
    """The environment file with cluster.argocd.repoURL and destinationServer set (the rest
    of the spec, `extends:` included, is kept; comments are not)."""
    document = yaml.safe_load(text)
    if not isinstance(document, dict):
        raise RepoError(f"{source}: not a mapping")
    cluster = document.setdefault("cluster", {})
    argocd = cluster.setdefault("argocd", {})
    argocd["repoURL"] = repo_url
    argocd["destinationServer"] = server
    header = f"# {source} with cluster.argocd.repoURL and destinationServer pointed at the box\n"
    return header + yaml.safe_dump(document, sort_keys=False)


def git(worktree: Path, *args: str) -> str:
    """Run git in `worktree` with the box's identity and no user or system configuration."""
    env = {
        **os.environ,
        **GIT_AUTHOR,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
    }
    done = subprocess.run(
        ["git", *args], cwd=worktree, env=env, capture_output=True, text=True, check=False, timeout=120
    )
    if done.returncode != 0:
        raise RepoError(f"git {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


@dataclass(frozen=True)
class Repo:
    """The box's repository: a work tree (`checkout`) whose commits are pushed to `bare`."""

    folder: Path
    branch: str

    @property
    def checkout(self) -> Path:
        return self.folder / "checkout"

    @property
    def bare(self) -> Path:
        return self.folder / "repo.git"

    @property
    def url(self) -> str:
        return self.bare.as_uri()

    def render(self, env_name: str) -> tuple[Environment, list[RenderedFile]]:
        """Render environments/<env_name>.yaml of the checkout into its rendered/<env_name>/."""
        env = load(self.checkout, env_name)
        files = render_tree(env)
        swap(self.checkout, env_name, stage(self.checkout, env_name, files))
        return env, files

    def commit(self, message: str) -> str:
        """Commit everything in the checkout and push it to the bare repository's branch;
        returns the commit id."""
        git(self.checkout, "add", "-A")
        git(self.checkout, "commit", "--quiet", "--allow-empty", "-m", message)
        git(self.checkout, "push", "--quiet", str(self.bare), f"HEAD:refs/heads/{self.branch}")
        return git(self.checkout, "rev-parse", "HEAD").strip()

    def head(self) -> str:
        return git(self.bare, "rev-parse", f"refs/heads/{self.branch}").strip()


def create(
    root: Path, env_name: str, scale: int, speed: int, folder: Path, branch: str, server: str
) -> tuple[Repo, Environment, list[RenderedFile]]:
    """The box's repository in `folder`: environments/ of `root` (scaled, sped up), the
    environment pointed at the box (pointed_spec), its render, one commit on `branch`."""
    repo = Repo(folder, branch)
    scaled_checkout(root, env_name, scale, repo.checkout, speed)
    path = repo.checkout / ENV_DIR / f"{env_name}.yaml"
    source = f"{ENV_DIR}/{env_name}.yaml"
    path.write_text(
        pointed_spec(path.read_text(encoding="utf-8"), repo.url, server, source), encoding="utf-8"
    )
    env, files = repo.render(env_name)
    repo.bare.mkdir(parents=True, exist_ok=True)
    git(repo.bare, "init", "--quiet", "--bare", f"--initial-branch={branch}")
    git(repo.checkout, "init", "--quiet", f"--initial-branch={branch}")
    repo.commit(f"{ENV_DIR}/ and {RENDERED}/{env_name}/ as the box deploys them")
    return repo, env, files
