"""Argo CD's glob (util/glob/glob.go in v3.5.1: gobwas/glob v0.2.3, go.mod:53) as a regular
expression, for the render's own reading of what Argo CD matches: directory include/exclude,
AppProject sourceRepos and destinations.

gobwas/glob's syntax (glob.go:11-36 at v0.2.3): `*` any run of characters but a separator,
`**` any run, `?` one character but a separator, `[abc]` / `[a-z]` / `[!abc]` a class,
`{a,b}` an alternation, a backslash escapes the next character; everything else is literal.
A pattern that does not compile (an unclosed `[`) matches nothing: Argo CD's util/glob
Match logs the error and answers false (util/glob/glob.go:31-38). With no separators (how
Argo CD matches directory globs and destinations) `*` and `**` are the same.
"""

from __future__ import annotations

import re
from functools import cache

SPECIAL = frozenset("*?[]{}\\!")


@cache
def regex(pattern: str, separators: str = "") -> re.Pattern[str]:
    """gobwas/glob's `pattern` compiled with `separators`, as a regular expression."""
    one = f"[^{re.escape(separators)}]" if separators else "."
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 1
        elif c == "*":
            if pattern.startswith("**", i):
                out.append(".*")
                i += 1
            else:
                out.append(f"{one}*")
        elif c == "?":
            out.append(one)
        elif c == "{":
            out.append("(?:")
            depth += 1
        elif c == "}" and depth:
            out.append(")")
            depth -= 1
        elif c == "," and depth:
            out.append("|")
        elif c == "[" and pattern.find("]", i + 1) < 0:
            return re.compile("(?!)")  # does not compile in gobwas: matches nothing
        elif c == "[" and (end := pattern.find("]", i + 1)) > i:
            body = pattern[i + 1 : end]
            negate = body.startswith("!")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\").replace("^", "\\^") + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.S)


def matches(pattern: str, text: str, separators: str = "") -> bool:
    return regex(pattern, separators).fullmatch(text) is not None


def literal(text: str) -> str:
    """`text` as a glob that matches exactly itself (every special character escaped)."""
    return "".join("\\" + c if c in SPECIAL else c for c in text)
