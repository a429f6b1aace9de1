"""What a scene is given and what it returns (the registry in __init__.py runs scenes; a scene
imports these from here, so no scene imports the registry that imports it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the CLI imports SCENES for its help text; kubernetes is a dev requirement
    from box.kube import Kube
    from box.state import State
    from generators.model.environment import Environment


@dataclass
class SceneContext:
    """What a scene may use: a client of the running box (admin), its environment as
    rendered (scaled and sped up like the box), the box's state (Prometheus URL, processes),
    its run folder, and `say` for progress lines (stderr in the CLI)."""

    kube: Kube
    env: Environment
    state: State
    folder: Path
    say: Callable[[str], None]


class SceneResult(Protocol):
    @property
    def ok(self) -> bool: ...

    def lines(self) -> list[str]: ...
