"""The components in render order: the only list (docs/components.md, "Adding a component").

Order matters twice: render_tree() passes each component the objects of those before it,
and argocd, last, describes everything above it. Sync waves (generators/syncwaves.py), not
this order, decide the order Argo CD applies objects in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from generators.components import Obj, argocd, health, kueue, monitoring, namespaces, overflow, priorities
from generators.model.environment import Environment

Generate = Callable[[Environment, Sequence[Obj]], list[Obj]]
InstallerInputs = Callable[[Environment], dict[str, tuple[str, Obj]]]


def _no_inputs(_env: Environment) -> dict[str, tuple[str, Obj]]:
    return {}


@dataclass(frozen=True)
class Component:
    name: str  # its folder: rendered/<env>/<name>/ and generators/components/<name>[.py|/]
    generate: Generate
    installer_inputs: InstallerInputs = _no_inputs  # file name -> (header, document)


COMPONENTS: tuple[Component, ...] = (
    Component("namespaces", namespaces.generate),
    Component("priorities", priorities.generate),
    Component("kueue", kueue.generate, kueue.installer_inputs),
    Component("monitoring", monitoring.generate, monitoring.installer_inputs),
    Component("overflow", overflow.generate),
    Component("health", health.generate),
    Component("argocd", argocd.generate),  # last: it describes everything above
)
NAMES: tuple[str, ...] = tuple(c.name for c in COMPONENTS)
