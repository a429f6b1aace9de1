"""User-facing errors: one line, `path:line:col: error: what (spec.path); hint`, never a traceback."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A 1-based position in a file, shown relative to the repository root."""

    file: str
    line: int = 1
    col: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Problem:
    location: Location
    message: str
    spec_path: str = ""
    hint: str = ""
    # "warning": printed, but the environment still renders (nothing in it is invalid).
    severity: str = "error"

    def format(self) -> str:
        text = f"{self.location}: {self.severity}: {self.message}"
        if self.spec_path:
            text += f" ({self.spec_path})"
        if self.hint:
            text += f"; {self.hint}"
        return text


class SpecError(Exception):
    """One or more problems in an environment file; nothing may be written."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(p.format() for p in problems))
        self.problems = problems


def format_path(path: tuple[str | int, ...]) -> str:
    """`("pools", 0, "nodes")` -> `pools[0].nodes`: how people name a spot in the spec."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "<root>"


def once(reports: Iterable[tuple[str, str, str]]) -> list[str]:
    """Lines of (environment, file, line) reports, each line once, in first-seen order.

    A mistake in a base file (`_defaults.yaml`) fails every environment that extends it:
    it is printed once, at the base file, naming the environments that inherit it, instead
    of once per environment with no hint why."""
    seen: dict[str, tuple[str, list[str]]] = {}
    for env, file, line in reports:
        seen.setdefault(line, (file, []))[1].append(env)
    out = []
    for line, (file, envs) in seen.items():
        inherited = [env for env in envs if file != f"environments/{env}.yaml"]
        out.append(
            f"{line} [extended by {', '.join(inherited)}]"
            if inherited and file.startswith("environments/_")
            else line
        )
    return out
