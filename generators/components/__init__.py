"""One module per rendered/<env>/<component>/ folder: generate(env) -> list of objects.

The registry below is the only list of components; the folder name under rendered/ is the
module name, so a reader finds the code behind any rendered file from its path alone.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from generators.model.types import Environment

Obj = dict[str, Any]
Generator = Callable[[Environment], list[Obj]]
# generate(env, objects of the components listed before it): for a component that describes
# the others (argocd). It may also define generate(env) for standalone use.
Describer = Callable[[Environment, list[Obj]], list[Obj]]

COMPONENTS: tuple[str, ...] = (
    "namespaces",
    "priorities",
    "kueue",
    "monitoring",
    "overflow",
    "health",
    "argocd",  # last: its whitelist and ignoreDifferences describe everything above
)


def generator(component: str) -> Generator:
    module = importlib.import_module(f"generators.components.{component}")
    gen: Generator = module.generate
    return gen


def describer(component: str) -> Describer | None:
    """The component's generate_from(env, earlier objects), if it has one."""
    module = importlib.import_module(f"generators.components.{component}")
    describe: Describer | None = getattr(module, "generate_from", None)
    return describe
