"""Cross-object rules over the rendered objects of one environment.

Each policy is a module here with
    ID         short kebab-case id, printed in every finding (`quota-conservation`)
    RATIONALE  one line a reviewer can agree with: why the rule exists
    SEVERITY   "error" (fails `generate.py validate`) or "warning" (printed only)
    check(ctx: Context) -> Iterable[Finding]
and one entry in POLICIES. See docs/validation.md, "Adding a policy".
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cache
from typing import get_args

from policies.context import Context, Finding, Severity

# Module names under policies/, in the order `validate --list` shows them.
POLICIES: tuple[str, ...] = (
    "quota_conservation",
    "quantities",
    "references",
    "kueue_rules",
    "placement",
    "priorities",
    "taints",
    "gate_query",
    "quarantine",
    "rbac",
    "workloads",
    "dcgm_counters",
    "size",
    "names",
    "sync_waves",
)


@dataclass(frozen=True)
class Policy:
    id: str
    rationale: str
    severity: Severity
    check: Callable[[Context], Iterable[Finding]]

    def run(self, ctx: Context) -> list[Finding]:
        """The policy's findings, stamped with its id and severity."""
        return [replace(f, policy=self.id, severity=self.severity) for f in self.check(ctx)]


@cache
def registry() -> tuple[Policy, ...]:
    """Every policy in POLICIES; raises TypeError for a module missing part of the contract."""
    loaded = []
    for name in POLICIES:
        module = importlib.import_module(f"policies.{name}")
        policy = Policy(module.ID, module.RATIONALE, module.SEVERITY, module.check)
        if policy.severity not in get_args(Severity) or "\n" in policy.rationale:
            raise TypeError(f"policies/{name}.py: SEVERITY must be error|warning, RATIONALE one line")
        loaded.append(policy)
    return tuple(loaded)


def run_all(ctx: Context) -> list[Finding]:
    """Findings of every policy over one environment, sorted."""
    return sorted(f for policy in registry() for f in policy.run(ctx))


__all__ = ["POLICIES", "Context", "Finding", "Policy", "registry", "run_all"]
