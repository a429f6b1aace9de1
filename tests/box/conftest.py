"""The box fixture of tests/box: each module that uses `box` gets a box of its own
(tests/support/box.py), of the environment and speed it declares:

    BOX_ENV = "staging"        # required
    BOX_SPEED = 30             # optional, default 1 (`box up --speed`)
    BOX_SCALE = 4              # optional, default 1 (`box up --scale`)
    BOX_ARGOCD = True          # optional, default False (`box up --argocd`)

and the `scene` fixture: the module's SCENE run once on that box through the CLI, as a
user runs it (`box scene SCENE BOX_ENV`), allowed SCENE_SECONDS:

    SCENE = "inference-scales"
    SCENE_SECONDS = 900

Own box, not shared: the scenes change what the next one would start from (node taints,
gate state, PriorityClasses, quota in use): docs/controlplane.md, "Tests on the box".
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.box import SceneRun, UpBox, module_box, run_scene


@pytest.fixture(scope="module")
def box(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpBox]:
    module = request.module
    with module_box(
        request,
        tmp_path_factory,
        module.BOX_ENV,
        speed=getattr(module, "BOX_SPEED", 1),
        scale=getattr(module, "BOX_SCALE", 1),
        argocd=getattr(module, "BOX_ARGOCD", False),
    ) as up:
        yield up


@pytest.fixture(scope="module")
def scene(request: pytest.FixtureRequest, box: UpBox) -> SceneRun:
    return run_scene(box, request.module.SCENE, request.module.SCENE_SECONDS)
