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

COMPONENTS: tuple[str, ...] = (
    "namespaces",
    "priorities",
    "kueue",
    "monitoring",
    "overflow",
    "argocd",  # last by convention; it derives its whitelist from the others
)


def generator(component: str) -> Generator:
    module = importlib.import_module(f"generators.components.{component}")
    gen: Generator = module.generate
    return gen
