"""Which rendered files an Application's directory source applies, read as Argo CD v3.5.1's
repo server reads them (../shared/src/argo-cd-3.5.1.tar.gz, reposerver/repository/repository.go):

- it walks `source.path` and descends into subfolders only with `directory.recurse` (:2195-2199);
- a file counts only if its name ends in .yaml, .yml, .json or .jsonnet (:1965, :2118);
- `directory.exclude` and `directory.include` are matched against the path relative to
  `source.path` (:2158-2164) with util/glob and no separators (generators/gitops/argoglob.py),
  so `*` crosses `/`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from generators.gitops.argoglob import matches

MANIFEST = re.compile(r"^.*\.(yaml|yml|json|jsonnet)$")


def applied(source: Mapping[str, Any], paths: Iterable[str]) -> list[str]:
    """Of `paths` (relative to the repository root), those the directory `source` applies."""
    base = source["path"].strip("/")
    directory = source.get("directory", {})
    recurse = directory.get("recurse", False)
    include = directory.get("include", "")
    exclude = directory.get("exclude", "")
    chosen = []
    for path in paths:
        if not path.startswith(base + "/"):
            continue
        relative = path[len(base) + 1 :]
        if "/" in relative and not recurse:
            continue
        if not MANIFEST.match(relative.rpartition("/")[2]):
            continue
        if exclude and matches(exclude, relative):
            continue
        if include and not matches(include, relative):
            continue
        chosen.append(path)
    return chosen
