"""Decide the new node counts of an environment, or refuse, before anything is written.

Refused (every reason listed, one line each): GPU nodes in no pool, nodes in several
pools, a pool losing more than `max_drop` of its nodes at once (a mass outage, a wrong
kubeconfig or a label migration must not zero the quotas through an automated PR), and an
edited file that no longer validates.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from generators.errors import SpecError
from generators.inventory import census, edit
from generators.inventory.nodes import Node
from generators.layout import ENV_DIR
from generators.model.load import load
from generators.spec.load import load_document

SHOWN_NODE_NAMES = 5


@dataclass(frozen=True)
class PoolUpdate:
    pool: str
    before: int
    after: int
    matched: int
    counted_out: dict[str, str]  # node -> reason

    def describe(self) -> str:
        count = (
            f"{self.before} -> {self.after} nodes"
            if self.after != self.before
            else f"{self.after} nodes (unchanged)"
        )
        text = f"{self.pool}: {count}; {self.matched} matched"
        if self.counted_out:
            shown = [f"{n} {why}" for n, why in list(self.counted_out.items())[:SHOWN_NODE_NAMES]]
            more = len(self.counted_out) - len(shown)
            text += f", {len(self.counted_out)} counted out: {', '.join(shown)}" + (
                f", and {more} more" if more else ""
            )
        return text


@dataclass
class SyncPlan:
    updates: list[PoolUpdate]
    refusals: list[str] = field(default_factory=list)
    edit: edit.NodeCountEdit | None = None  # None when refused or nothing changes


def _examples(names: list[str]) -> str:
    shown = names[:SHOWN_NODE_NAMES]
    return ", ".join(shown) + (f", and {len(names) - len(shown)} more" if len(names) > len(shown) else "")


def _node_refusals(taken: census.Census, nodes_display: str) -> list[str]:
    """One line per cause with a count and a few names: a NodeList of the wrong cluster
    printed a line per node (hundreds in prod) before the line that explained it."""
    out = []
    if taken.unmatched:
        names = [n.name for n in taken.unmatched]
        if not any(c.matched for c in taken.pools.values()):
            out.append(
                f"{nodes_display}: error: none of its {len(names)} GPU nodes matches any pool of "
                "the environment: is it the NodeList of another cluster? (check kubectl's "
                "current context)"
            )
        out.append(
            f"{nodes_display}: error: {len(names)} GPU node{'s' if len(names) != 1 else ''} "
            f"match{'es' if len(names) == 1 else ''} no pool's nodeLabels ({_examples(names)}); "
            "label them like their pool, or add the pool to the environment"
        )
    by_pools: dict[tuple[str, ...], list[str]] = {}
    for node, pools in taken.ambiguous:
        by_pools.setdefault(tuple(pools), []).append(node.name)
    out += [
        f"{nodes_display}: error: {len(names)} node{'s' if len(names) != 1 else ''} match the "
        f"nodeLabels of several pools ({', '.join(pools)}): {_examples(names)}; make the pools' "
        "nodeLabels disjoint"
        for pools, names in by_pools.items()
    ]
    return out


def _common_taint(update: PoolUpdate) -> str | None:
    """The one undeclared taint every counted-out node of the pool carries, if there is one:
    a pool-wide taint (managed GPU pools set nvidia.com/gpu=present:NoSchedule) is a missing
    declaration, not nodes gone bad."""
    reasons = set(update.counted_out.values())
    if len(reasons) == 1 and update.counted_out and (reason := reasons.pop()).startswith("tainted "):
        return reason.removeprefix("tainted ")
    return None


def _drop_refusal(root: Path, env_name: str, index: int, update: PoolUpdate, max_drop: Fraction) -> str:
    where = load_document(root, env_name).locate(("pools", index, "nodes"))
    lost = update.before - update.after
    share = float(Fraction(lost, update.before))
    hint = "check the cluster first, or accept the drop with --max-drop-fraction"
    taint = _common_taint(update)
    if taint is not None and update.after == 0:
        # Every node of the pool carries it: accepting the drop would zero the pool's quota.
        hint = (
            f"every node carries the taint {taint}: declare it under pools[{index}].taints "
            "(its pods tolerate it), do not accept the drop"
        )
    return (
        f"{where}: error: pool {update.pool} would lose {lost} of {update.before} nodes at once, "
        f"{share:.0%}, over the {float(max_drop):.0%} allowed (pools[{index}].nodes); {hint}"
    )


def _validate(root: Path, env_name: str, planned: edit.NodeCountEdit) -> list[str]:
    """Load the edited environment from a scratch copy: nothing invalid is ever written."""
    with tempfile.TemporaryDirectory(prefix="trainyard-sync-") as scratch:
        copy = Path(scratch)
        shutil.copytree(root / ENV_DIR, copy / ENV_DIR)
        (copy / ENV_DIR / planned.path.name).write_text(planned.edited, encoding="utf-8")
        try:
            load(copy, env_name)
        except SpecError as exc:
            return [p.format() for p in exc.problems]
    return []


def plan_sync(
    root: Path, env_name: str, nodes: list[Node], nodes_display: str, max_drop: Fraction
) -> SyncPlan:
    env = load(root, env_name)
    taken = census.take(env, nodes)
    updates = [
        PoolUpdate(p.name, p.nodes, len(c.counted), len(c.matched), c.counted_out)
        for p, c in ((p, taken.pools[p.name]) for p in env.pools)
    ]
    result = SyncPlan(updates, _node_refusals(taken, nodes_display))
    for index, update in enumerate(updates):
        if update.before > 0 and Fraction(update.before - update.after, update.before) > max_drop:
            result.refusals.append(_drop_refusal(root, env_name, index, update, max_drop))
    changed = {u.pool: u.after for u in updates if u.after != u.before}
    if result.refusals or not changed:
        return result
    try:
        result.edit = edit.plan_edit(root, env_name, changed)
    except edit.EditRefused as exc:
        result.refusals.append(str(exc))
        return result
    result.refusals += _validate(root, env_name, result.edit)
    if result.refusals:
        result.edit = None
    return result
