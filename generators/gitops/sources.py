"""Which rendered files an Application's directory source applies, read as Argo CD v3.5.1's
repo server reads them (../shared/src/argo-cd-3.5.1.tar.gz, reposerver/repository/repository.go):

- it walks `source.path` and descends into subfolders only with `directory.recurse` (:2195-2199);
- a file counts only if its name ends in .yaml, .yml, .json or .jsonnet (:1965, :2118);
- `directory.exclude` and `directory.include` are matched against the path relative to
  `source.path` (:2158-2164) with util/glob over gobwas/glob and no separators, so `*`
  crosses `/`, `?` is one character, `{a,b}` an alternation and `[...]` a class.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

MANIFEST = re.compile(r"^.*\.(yaml|yml|json|jsonnet)$")


@cache
def glob_regex(pattern: str) -> re.Pattern[str]:
    """gobwas/glob's syntax with no separators, as a regular expression."""
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 1
        elif c == "*":
            out.append(".*")  # `**` is the same thing when nothing is a separator
        elif c == "?":
            out.append(".")
        elif c == "{":
            out.append("(?:")
            depth += 1
        elif c == "}" and depth:
            out.append(")")
            depth -= 1
        elif c == "," and depth:
            out.append("|")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                negate = body.startswith("!")
                body = body[1:] if negate else body
                out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.S)


def matches(pattern: str, path: str) -> bool:
    return glob_regex(pattern).fullmatch(path) is not None


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
