"""The box fixture of tests/box: each module that uses `box` gets a box of its own
(tests/support/box.py), of the environment and speed it declares:

    BOX_ENV = "staging"        # required
    BOX_SPEED = 30             # optional, default 1 (`box up --speed`)

Own box, not shared: the scenes change what the next one would start from (node taints,
gate state, PriorityClasses, quota in use): docs/controlplane.md, "Tests on the box".
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.box import UpBox, module_box


@pytest.fixture(scope="module")
def box(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpBox]:
    module = request.module
    with module_box(
        request,
        tmp_path_factory,
        module.BOX_ENV,
        speed=getattr(module, "BOX_SPEED", 1),
    ) as up:
        yield up
