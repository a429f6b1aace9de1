"""The components in render order, found from their modules (docs/components.md, "Adding a
component"): every module or package of generators/components/ but this one is a component,
named as its folder, with `generate(env, earlier)` and optionally `installer_inputs(env)`. So
adding one is its module and templates: no list to extend.

Order matters twice: render_tree() passes each component the objects of those before it,
and argocd, last, describes everything above it. The others read nothing of each other, so
they go by name. Sync waves (generators/gitops/syncwaves.py), not this order, decide the order
Argo CD applies objects in.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from generators.k8s.objects import Obj
from generators.model.environment import Environment

Generate = Callable[[Environment, Sequence[Obj]], list[Obj]]
InstallerInputs = Callable[[Environment], dict[str, tuple[str, Obj]]]

PACKAGE = "generators.components"
NOT_COMPONENTS = frozenset({"registry"})  # this module; the package's __init__ is not listed
LAST = "argocd"  # its AppProjects and Application describe every other component's objects


def no_inputs(_env: Environment) -> dict[str, tuple[str, Obj]]:
    return {}


@dataclass(frozen=True)
class Component:
    name: str  # its folder: rendered/<env>/<name>/ and generators/components/<name>[.py|/]
    generate: Generate
    installer_inputs: InstallerInputs = no_inputs  # file name -> (header, document)


def discover(folder: Path = Path(__file__).parent, package: str = PACKAGE) -> tuple[Component, ...]:
    """One Component per module or package of `package` (in `folder`), by name, LAST at the end."""
    where = package.replace(".", "/")
    found = []
    for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda i: i.name):
        if info.name in NOT_COMPONENTS:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        generate = getattr(module, "generate", None)
        if not callable(generate):
            raise ImportError(
                f"{where}/{info.name}: no generate(env, earlier); only components live in "
                f"{where}/ (shared code: generators/k8s/ or the model; docs/components.md)"
            )
        found.append(Component(info.name, generate, getattr(module, "installer_inputs", no_inputs)))
    if LAST not in {c.name for c in found}:
        raise ImportError(f"{where}/{LAST}: missing; it renders the Argo CD objects of the others")
    return tuple(sorted(found, key=lambda c: c.name == LAST))  # stable: by name, LAST last


COMPONENTS: tuple[Component, ...] = discover()
NAMES: tuple[str, ...] = tuple(c.name for c in COMPONENTS)
