"""The box fixture of tests/box: a box (tests/support/box.py) of the environment and speed the
module declares,

    BOX_ENV = "staging"        # required
    BOX_SPEED = 30             # optional, default 1 (`box up --speed`)
    BOX_SCALE = 4              # optional, default 1 (`box up --scale`)
    BOX_ARGOCD = True          # optional, default False (`box up --argocd`)
    BOX_LEAVES = "why"         # optional: what the module leaves changed on the box
    BOX_LAST = True            # optional: the module brings the box down

and the `scene` fixture: the module's SCENE run once on that box through the CLI, as a
user runs it (`box scene SCENE BOX_ENV`), allowed SCENE_SECONDS:

    SCENE = "inference-scales"
    SCENE_SECONDS = 900

Shared, and checked: the modules that declare the same box run one after another
(pytest_collection_modifyitems below groups them: a BOX_LEAVES module after the others, a
BOX_LAST module last) on one box, brought up once and down after the last of them. A box
takes 30 to 70 s to come up and go down on the 2 shared cores; a module's own box would cost
that per module. Sharing is sound only if each module leaves the box as it found it (the
scenes remove what they created and heal what they broke): when a module is done and another
is to use the box, the box is read again (tests/box/as_found.py: rendered objects, queues
and their usage, created objects, pods, node taints, the synthetic exporter's faults,
Prometheus's targets) and must equal its reading when it came up, within CLEAN_SECONDS (the
garbage collector and the controllers finish a clean-up on their own time). If it does not,
the module fails with what differs, and the box is brought down, so the next module starts
on a fresh one. A module that cannot leave the box as found says so (BOX_LEAVES:
the fault scenes restart the box's processes): it runs after every module that needs the
box as found, and only a BOX_LAST module (any state will do for it) follows it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest

from box.kube import wait_for
from box.state import State
from tests.box import as_found
from tests.support import ROOT
from tests.support.box import SceneRun, UpBox, module_box, run_scene

HERE = Path(__file__).parent
CLEAN_SECONDS = 180  # for the clean-up a scene started to finish (pods garbage-collected)
CHECK_INTERVAL = 2.0  # each reading is ~150 GETs

Key = tuple[str, int, int, bool]  # env, speed, scale, argocd: what `box up` was given


def _key(module: ModuleType) -> Key:
    return (
        module.BOX_ENV,
        getattr(module, "BOX_SPEED", 1),
        getattr(module, "BOX_SCALE", 1),
        getattr(module, "BOX_ARGOCD", False),
    )


def _box_module(item: pytest.Item) -> ModuleType | None:
    """The module of a test here that declares a box (BOX_ENV) for this file's `box` fixture."""
    module: ModuleType | None = getattr(item, "module", None)
    if module is None or Path(str(module.__file__)).parent != HERE or not hasattr(module, "BOX_ENV"):
        return None
    return module


def _box_user(item: pytest.Item) -> ModuleType | None:
    """The module of `item` if `item` uses the `box` fixture."""
    return _box_module(item) if "box" in getattr(item, "fixturenames", ()) else None


def _rank(item: pytest.Item) -> tuple[bool, bool]:
    module = _box_module(item)
    return bool(getattr(module, "BOX_LAST", False)), bool(getattr(module, "BOX_LEAVES", ""))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules that declare the same box run one after another, at the place of the first of
    them, a BOX_LAST module last; every other test keeps its place."""
    groups: dict[Key, list[pytest.Item]] = {}
    for item in items:
        module = _box_module(item)
        if module is not None:
            groups.setdefault(_key(module), []).append(item)
    placed: set[int] = set()
    ordered: list[pytest.Item] = []
    for item in items:
        if id(item) in placed:
            continue
        module = _box_module(item)
        if module is None:
            ordered.append(item)
            continue
        group = groups[_key(module)]
        ordered.extend(sorted(group, key=_rank))  # stable: the file order otherwise

        placed.update(id(i) for i in group)
    items[:] = ordered


@dataclass
class SharedBox:
    """The one box up at a time, the modules still to use it and its reading when it came up."""

    users: dict[Key, dict[str, ModuleType]]  # modules still to run, by the box they declare
    key: Key | None = None
    up: UpBox | None = None
    found: as_found.Reading = field(default_factory=dict)
    rendered: list[dict[str, object]] = field(default_factory=list)
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def get(self, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> UpBox:
        key = _key(request.module)
        if self.key == key and self.up is not None and _still_up(self.up):
            return self.up
        self.close()
        env, speed, scale, argocd = key
        up = self.stack.enter_context(
            module_box(request, tmp_path_factory, env, speed=speed, scale=scale, argocd=argocd)
        )
        self.key, self.up = key, up
        if len(self.users[key]) > 1:  # another module will use it: what it must find again
            self.rendered = _rendered(up)
            self.found = as_found.read(up.kube, up.state, self.rendered)
        return up

    def done(self, module: ModuleType) -> None:
        """After `module`: down if no other module wants this box, else check it is as found."""
        key = _key(module)
        self.users[key].pop(module.__name__, None)
        up = self.up
        if up is None or self.key != key or not self.users[key] or not _still_up(up):
            self.close()
            return
        if all(getattr(m, "BOX_LAST", False) for m in self.users[key].values()):
            return  # what is left is to bring it down: any state will do
        last: list[str] = []

        def as_it_was() -> bool:
            last[:] = as_found.difference(self.found, as_found.read(up.kube, up.state, self.rendered))
            return not last

        try:
            wait_for(as_it_was, CLEAN_SECONDS, "the box as the module found it", CHECK_INTERVAL)
        except AssertionError:
            self.close()  # the next module gets a fresh box
            pytest.fail(
                f"{module.__name__} left the shared box changed after {CLEAN_SECONDS} s "
                "(tests/box/conftest.py):\n" + "\n".join(last[:40])
            )

    def close(self) -> None:
        self.key, self.up, self.found, self.rendered = None, None, {}, []
        self.stack.close()


def _still_up(up: UpBox) -> bool:
    state = State.load(up.folder)
    return state is not None and state.ready


def _rendered(up: UpBox) -> list[dict[str, object]]:
    """The objects `box up` applied: its sped-up, scaled copy of the rendering (box/up.py)."""
    from box.up import rendered
    from generators.pipeline.render import objects

    _, files = rendered(ROOT, up.env, up.state.scale, up.folder, up.state.speed)
    return objects(files)


@pytest.fixture(scope="session")
def shared_box(request: pytest.FixtureRequest) -> Iterator[SharedBox]:
    users: dict[Key, dict[str, ModuleType]] = {}
    for item in request.session.items:
        module = _box_user(item)
        if module is not None:
            users.setdefault(_key(module), {})[module.__name__] = module
    shared = SharedBox(users)
    yield shared
    shared.close()


@pytest.fixture(scope="module")
def box(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, shared_box: SharedBox
) -> Iterator[UpBox]:
    yield shared_box.get(request, tmp_path_factory)
    shared_box.done(request.module)


@pytest.fixture(scope="module")
def scene(request: pytest.FixtureRequest, box: UpBox) -> SceneRun:
    return run_scene(box, request.module.SCENE, request.module.SCENE_SECONDS)
